package dispatch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/transport"
)

// The identity Initialize establishes is the connection's for every later
// call: its method list applies to each of them, and a connection that
// never initialized has none.
func TestConnIdentityPersistsAcrossCalls(t *testing.T) {
	a := newAuthEnv(t)
	c := a.framedRaw()
	require.NoError(t, initialize(c, tokenLimited)) // dashboard: list_skills only
	for range 2 {
		_, err := c.Call(t.Context(), "list_skills", nil)
		require.NoError(t, err)
		_, err = c.Call(t.Context(), "describe_skill", map[string]any{"name": "acme.math.add"})
		assert.Equal(t, StringPermissionDenied, stringCode(err))
	}
	_, err := a.framedRaw().Call(t.Context(), "list_skills", nil)
	assert.Equal(t, transport.StringMethodNotFound, stringCode(err), "no identity before Initialize")
}

// The connection slot an identity's connection holds is freed when the
// connection closes, also when it initialized twice (the first slot is
// not leaked), so the identity can connect again.
func TestConnSlotFreedOnClose(t *testing.T) {
	e := connCapEnv(t, 2)
	first := e.framedRaw()
	require.NoError(t, initialize(first, tokenAgent))
	_ = initialize(first, tokenAgent) // allowed or not, it must not hold a second slot
	second := e.framedRaw()
	require.NoError(t, initialize(second, tokenAgent))
	require.NoError(t, first.Close())
	require.NoError(t, second.Close())
	for range 2 {
		c := e.framedRaw()
		require.Eventually(t, func() bool { return initialize(c, tokenAgent) == nil }, 30*time.Second, 20*time.Millisecond,
			"both slots free once their connections closed")
	}
}

// A watch_run ends when its connection closes, though the run goes on.
func TestConnWatchEndsOnClose(t *testing.T) {
	unblock := make(chan struct{})
	e, _ := newExecEnv(t, func(job sandbox.Job) (*sandbox.Result, error) {
		job.Observer.Admitted()
		<-unblock
		return &sandbox.Result{Status: sandbox.StatusCompleted, Output: json.RawMessage(`{}`)}, nil
	})
	defer close(unblock)
	c := e.framed()
	res, err := c.Call(t.Context(), "run_code", map[string]any{"language": "python", "code": "def main(a): pass", "async": true})
	require.NoError(t, err)
	var ref struct {
		RunID string `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal(res, &ref))
	watcher := e.framed()
	inflight := e.metrics.Inflight.WithLabelValues(metrics.FrontFramed)
	go func() { _, _ = watcher.Call(t.Context(), "watch_run", map[string]any{"run_id": ref.RunID}) }()
	require.Eventually(t, func() bool { return testutil.ToFloat64(inflight) == 1 }, 30*time.Second, 5*time.Millisecond)
	require.NoError(t, watcher.Close())
	require.Eventually(t, func() bool { return testutil.ToFloat64(inflight) == 0 }, 30*time.Second, 5*time.Millisecond,
		"the watch ended with its connection")
	res, err = c.Call(t.Context(), "get_run", map[string]any{"run_id": ref.RunID})
	require.NoError(t, err)
	assert.Contains(t, string(res), `"status":"running"`, "the run goes on")
}

// connCapEnv is a dispatcher whose one identity (token tokenAgent) may
// hold n connections at once.
func connCapEnv(t *testing.T, n int) *env {
	t.Helper()
	path := filepath.Join(t.TempDir(), "auth.yaml")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`identities:
  - name: capped
    class: device
    tokens: [%s]
    methods: ["*"]
    namespaces: ["*"]
    limits: {max_connections: %d}
`, auth.HashToken(tokenAgent), n)), 0o600))
	store, err := auth.Load(path, auth.Options{Logger: zerolog.Nop()})
	require.NoError(t, err)
	return newEnvOpts(t, examplesDir(), 1024, func(o *Options) { o.Authn = store })
}
