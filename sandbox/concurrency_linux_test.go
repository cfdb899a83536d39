package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParallelRunsAreIsolated(t *testing.T) {
	r := ownRunner(t, func(c *Config) { c.Workers, c.WarmPool = 4, 2 })
	code := `
import os, time

def main(args):
    token = args["token"]
    for d in ("/workspace", "/tmp"):
        with open(os.path.join(d, token), "w") as f:
            f.write(token)
    time.sleep(0.3)  # overlap with the other runs
    return {"files": sorted(os.listdir("/workspace")) + sorted(os.listdir("/tmp")),
            "procs": len([p for p in os.listdir("/proc") if p.isdigit()]),
            "env": os.environ.get("TOKEN")}
`
	const n = 6
	var wg sync.WaitGroup
	results := make([]*Result, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			token := fmt.Sprintf("token-%d", i)
			args, _ := json.Marshal(map[string]string{"token": token})
			results[i], errs[i] = r.Run(context.Background(), Job{RunID: token, Code: code, Args: args,
				Env: map[string]string{"TOKEN": token}})
		})
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		token := fmt.Sprintf("token-%d", i)
		out := output(t, results[i])
		assert.Equal(t, []any{".blobs", "outputs", token, token}, out["files"], "run %d sees only its own files", i)
		assert.Equal(t, 2.0, out["procs"], "run %d sees only its own processes", i)
		assert.Equal(t, token, out["env"])
	}
	assertHealthyAndClean(t, r)
}

func TestCancelKillsTheRun(t *testing.T) {
	r := ownRunner(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx, Job{Code: "import time\n\ndef main(args):\n    time.sleep(60)\n", Timeout: time.Minute})
		done <- err
	}()
	require.Eventually(t, func() bool { return r.Stats().Running == 1 }, 20*time.Second, time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled run did not return")
	}
	assertHealthyAndClean(t, r)
	_, err := r.Run(ctx, Job{Code: trivialCode})
	require.ErrorIs(t, err, context.Canceled, "a cancelled context does not start a run")
}

func TestOverloadedAndClose(t *testing.T) {
	r := ownRunner(t, func(c *Config) { c.Workers, c.QueueSize = 1, 1 })
	sleep := Job{Code: "import time\n\ndef main(args):\n    time.sleep(60)\n", Timeout: time.Minute}
	errs := make(chan error, 2)
	go func() { _, err := r.Run(context.Background(), sleep); errs <- err }()
	require.Eventually(t, func() bool { return r.Stats().Running == 1 }, 20*time.Second, time.Millisecond)
	go func() { _, err := r.Run(context.Background(), sleep); errs <- err }()
	require.Eventually(t, func() bool { return r.Stats().Queued == 1 }, 20*time.Second, time.Millisecond)

	_, err := r.Run(context.Background(), Job{Code: trivialCode})
	require.ErrorIs(t, err, ErrOverloaded, "queue full: refused at once")

	require.NoError(t, r.Close())
	for range 2 {
		require.ErrorIs(t, <-errs, ErrClosed, "runs in flight and queued end with ErrClosed")
	}
	assert.Equal(t, Stats{}, r.Stats())
	_, err = r.Run(context.Background(), Job{Code: trivialCode})
	require.ErrorIs(t, err, ErrClosed)
	require.NoError(t, r.Close(), "Close is idempotent")
	assertGone(t, r)
}

func TestCloseWithWarmPool(t *testing.T) {
	r := ownRunner(t, func(c *Config) { c.WarmPool = 3 })
	require.Eventually(t, func() bool { return r.Stats().WarmReady == 3 }, 30*time.Second, 10*time.Millisecond)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			_, err := r.Run(context.Background(), Job{Code: "import time\n\ndef main(args):\n    time.sleep(60)\n", Timeout: time.Minute})
			assert.True(t, errors.Is(err, ErrClosed), "%v", err)
		})
	}
	require.Eventually(t, func() bool { return r.Stats().Running == 3 }, 20*time.Second, time.Millisecond)
	require.NoError(t, r.Close())
	wg.Wait()
	assertGone(t, r)
}
