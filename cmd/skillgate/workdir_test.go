package main

import (
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/sandbox"
)

// --sandbox-work-dir picks the sandboxes' host directory; without it the
// sandbox's per-user default stays.
func TestSandboxWorkDirFlag(t *testing.T) {
	cfg, err := parseServe(t)
	require.NoError(t, err)
	assert.Equal(t, sandbox.DefaultConfig().WorkDir, cfg.sandbox(zerolog.Nop()).WorkDir)

	cfg, err = parseServe(t, "--sandbox-work-dir", "/var/lib/skillgate/sandbox")
	require.NoError(t, err)
	require.NoError(t, cfg.validate())
	assert.Equal(t, "/var/lib/skillgate/sandbox", cfg.sandbox(zerolog.Nop()).WorkDir)

	cfg, err = parseServe(t, "--sandbox-work-dir", "sandbox")
	require.NoError(t, err)
	assert.ErrorContains(t, cfg.validate(), "--sandbox-work-dir must be an absolute path")
}
