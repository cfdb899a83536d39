package auth

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A rejected file is read for unchanged entries up to the file size limit
// (4 MiB): at exactly 4 MiB (a smaller file only parses faster) the agent's unchanged entry keeps it working;
// one byte more and the file says nothing, so every identity is disabled.
func TestRejectedReloadAtFileSizeLimit(t *testing.T) {
	require.Equal(t, 4<<20, MaxFileSize, "the documented limit")
	broken := strings.Replace(expand(goodFile), "    methods: [list_skills]\n", "    methods: [list_skills]\n    colour: blue\n", 1)
	for _, tc := range []struct {
		size int
		kept bool
	}{{4 << 20, true}, {4<<20 + 1, false}} {
		path := tempFile(t, expand(goodFile))
		s, err := Load(path, Options{Logger: testLogger(t)})
		require.NoError(t, err)
		pad := tc.size - len(broken) - 2
		writeAtomic(t, path, broken+"#"+strings.Repeat("x", pad)+"\n")
		require.Error(t, s.Reload())
		_, err = s.AuthenticateToken(tokAgent)
		if tc.kept {
			assert.NoError(t, err, "size %d", tc.size)
		} else {
			assert.ErrorIs(t, err, ErrBadCredentials, "size %d", tc.size)
		}
	}
}
