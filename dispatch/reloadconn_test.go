package dispatch

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A reload of the auth file that keeps a connection's identity but
// changes its methods applies to the connection's next call, and to every
// call after it, without a new Initialize.
func TestReloadChangesConnMethods(t *testing.T) {
	a := newAuthEnv(t)
	c := a.framedRaw()
	require.NoError(t, initialize(c, tokenLimited)) // dashboard: list_skills only
	_, err := c.Call(t.Context(), "describe_skill", map[string]any{"name": "acme.math.add"})
	require.Equal(t, StringPermissionDenied, stringCode(err))

	widened := strings.Replace(authFile(false), "methods: [list_skills]\n", "methods: [list_skills, describe_skill]\n", 1)
	require.NotEqual(t, authFile(false), widened)
	require.NoError(t, os.WriteFile(a.path, []byte(widened), 0o600))
	require.NoError(t, a.store.Reload())
	for range 2 {
		_, err = c.Call(t.Context(), "describe_skill", map[string]any{"name": "acme.math.add"})
		assert.NoError(t, err)
	}

	require.NoError(t, os.WriteFile(a.path, []byte(authFile(false)), 0o600))
	require.NoError(t, a.store.Reload())
	for range 2 {
		_, err = c.Call(t.Context(), "describe_skill", map[string]any{"name": "acme.math.add"})
		assert.Equal(t, StringPermissionDenied, stringCode(err), "narrowed again")
	}
}
