package sandbox

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A run with network gets the proxy variables on top of its own; the
// caller's map is left as it was.
func TestWithProxyEnv(t *testing.T) {
	env := map[string]string{"A": "1"}
	got := withProxyEnv(env)
	assert.Equal(t, "1", got["A"])
	assert.Equal(t, "http://127.0.0.1:3128", got["HTTPS_PROXY"])
	assert.Equal(t, "http://127.0.0.1:3128", got["all_proxy"])
	assert.Equal(t, "", got["NO_PROXY"])
	assert.Len(t, got, 9)
	assert.Equal(t, map[string]string{"A": "1"}, env)
	assert.Len(t, withProxyEnv(nil), 8)
}
