package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVersionReportsVersionAndCommit: the values make dist stamps with
// -ldflags -X win; without them the build info (or "unknown") answers.
func TestVersionReportsVersionAndCommit(t *testing.T) {
	oldVersion, oldCommit := version, commit
	t.Cleanup(func() { version, commit = oldVersion, oldCommit })

	version, commit = "v1.2.3", "0123456789abcdef0123456789abcdef01234567"
	var out bytes.Buffer
	cmd := newVersionCommand()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{}) // not nil: cobra would read the test binary's own arguments
	require.NoError(t, cmd.Execute())
	assert.Regexp(t, `^skillgate v1\.2\.3 \(go[^,]+, [a-z0-9]+/[a-z0-9]+, commit 0123456789abcdef0123456789abcdef01234567\)\n$`, out.String())

	version, commit = "", ""
	assert.NotEmpty(t, buildVersion())
	assert.NotEmpty(t, buildCommit(), "the build info's vcs.revision, or unknown")
}
