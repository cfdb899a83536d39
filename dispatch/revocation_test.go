package dispatch

import (
	"context"
	"encoding/json"
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
)

// revokeEnv serves the auth file of authFile(false) with runs that last
// until release is closed.
func revokeEnv(t *testing.T, release chan struct{}) (*env, *auth.Store, string) {
	path := filepath.Join(t.TempDir(), "auth.yaml")
	require.NoError(t, os.WriteFile(path, []byte(authFile(false)), 0o600))
	store, err := auth.Load(path, auth.Options{Logger: zerolog.Nop()})
	require.NoError(t, err)
	e := newEnvOpts(t, examplesDir(), 256<<10, func(o *Options) {
		o.Authn = store
		o.Runner = heldUntil(release)
	})
	return e, store, path
}

// heldUntil is a runner whose runs last until release is closed or their
// context ends.
type heldUntil chan struct{}

func (r heldUntil) Run(ctx context.Context, job sandbox.Job) (*sandbox.Result, error) {
	if job.Observer != nil && job.Observer.Admitted != nil {
		job.Observer.Admitted()
	}
	select {
	case <-r:
		return &sandbox.Result{Status: sandbox.StatusCompleted, Output: json.RawMessage(`{}`)}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// waitInflight waits, a minute at most, until n calls of front are in
// flight.
func waitInflight(t *testing.T, e *env, front string, n float64) {
	t.Helper()
	g := e.metrics.Inflight.WithLabelValues(front)
	for range 60_000 {
		if testutil.ToFloat64(g) == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%v calls of %s never in flight", n, front)
}

// When a reload removes a token, the watch_run streams opened with it end
// with AUTH_REQUIRED, while those of the identity's other token go on; a
// streamed run of the removed token ends too (it is cancelled, as at a
// disconnect).
func TestRevokedTokenEndsFramedStreams(t *testing.T) {
	release := make(chan struct{})
	e, store, path := revokeEnv(t, release)
	revoked, kept := e.framedRaw(), e.framedRaw()
	require.NoError(t, initialize(revoked, tokenRevoked))
	require.NoError(t, initialize(kept, tokenAgent))
	res, err := revoked.Call(t.Context(), "run_code", json.RawMessage(`{"language":"python","code":"x","async":true}`))
	require.NoError(t, err)
	var ref struct {
		RunID string `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal(res, &ref))

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	watch := `{"run_id":"` + ref.RunID + `"}`
	ended := make(chan error, 3)
	for _, c := range []interface {
		Call(context.Context, string, any) (json.RawMessage, error)
	}{revoked, kept} {
		go func() {
			_, err := c.Call(ctx, "watch_run", json.RawMessage(watch))
			ended <- err
		}()
	}
	go func() {
		_, err := revoked.Call(ctx, "run_code", json.RawMessage(`{"language":"python","code":"x","stream":true}`))
		ended <- err
	}()
	waitInflight(t, e, metrics.FrontFramed, 3)

	require.NoError(t, os.WriteFile(path, []byte(authFile(true)), 0o600))
	require.NoError(t, store.Reload())
	for range 2 {
		select {
		case err := <-ended:
			assert.Equal(t, StringAuthRequired, stringCode(err), "%v", err)
		case <-ctx.Done():
			t.Fatal("a stream of the removed token did not end")
		}
	}
	select {
	case err := <-ended:
		t.Fatalf("the other token's watch ended too: %v", err)
	default:
	}
	close(release)
	select {
	case err := <-ended:
		assert.NoError(t, err, "the other token's watch ends with the run")
	case <-ctx.Done():
		t.Fatal("the other token's watch did not end with the run")
	}
}
