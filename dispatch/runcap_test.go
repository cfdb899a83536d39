package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/transport"
)

const tokenCarol = "sgt_carol-token-for-run-cap-tests"

// heldRunner holds every run until released, reporting each start.
type heldRunner struct{ started, release chan struct{} }

func (r *heldRunner) Run(ctx context.Context, job sandbox.Job) (*sandbox.Result, error) {
	r.started <- struct{}{}
	select {
	case <-r.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &sandbox.Result{Status: sandbox.StatusCompleted, Output: json.RawMessage(`{}`)}, nil
}

// Research item 1: an identity's concurrent_runs is held exactly. With
// two runs in flight a third is refused with RATE_LIMITED and a retry
// hint, on another connection of the same identity too; once one
// finishes, a new run is taken.
func TestConcurrentRunsCap(t *testing.T) {
	file := fmt.Sprintf(`identities:
  - {name: carol, class: agent, tokens: [%s], methods: ["*"], namespaces: ["*"], limits: {concurrent_runs: 2}}
`, auth.HashToken(tokenCarol))
	path := filepath.Join(t.TempDir(), "auth.yaml")
	require.NoError(t, os.WriteFile(path, []byte(file), 0o600))
	store, err := auth.Load(path, auth.Options{Logger: zerolog.Nop()})
	require.NoError(t, err)
	r := &heldRunner{started: make(chan struct{}, 8), release: make(chan struct{})}
	e := newEnvOpts(t, examplesDir(), 256<<10, func(o *Options) {
		o.Authn = store
		o.Limiter = auth.NewLimiter((&fakeClock{now: time.Unix(1000, 0)}).Now)
		o.Runner = r
	})
	a, b := e.as(tokenCarol)[0], e.as(tokenCarol)[0]
	const run = `{"language":"python","code":"x"}`
	done := make(chan *transport.Error, 3)
	for range 2 {
		go func() { _, err := a.call("run_code", run); done <- err }()
	}
	for range 2 {
		select {
		case <-r.started:
		case <-time.After(30 * time.Second): // safety net only
			t.Fatal("the first two runs did not start")
		}
	}
	for _, c := range []caller{a, b} {
		refused := make(chan *transport.Error, 1)
		go func() { _, err := c.call("run_code", run); refused <- err }()
		var terr *transport.Error
		select {
		case terr = <-refused:
		case <-r.started:
			t.Fatal("a third run started past concurrent_runs: 2")
		}
		require.NotNil(t, terr, "a third run past concurrent_runs: 2")
		assert.Equal(t, StringRateLimited, terr.EffectiveCode())
		require.NotNil(t, terr.Retry)
	}
	r.release <- struct{}{}
	require.Nil(t, <-done)
	go func() { _, err := b.call("run_code", run); done <- err }()
	select {
	case <-r.started:
	case <-time.After(30 * time.Second):
		t.Fatal("a slot was not given back")
	}
	r.release <- struct{}{}
	r.release <- struct{}{}
	require.Nil(t, <-done)
	require.Nil(t, <-done)
}
