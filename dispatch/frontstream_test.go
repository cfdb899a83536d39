package dispatch

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/runs"
	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/transport"
)

// A streamed run at a front door other than the framed transport sends
// its run_event notifications through the front door's Notifier, in seq
// order, started first and finished last, and then answers the run. The
// Notifier holds its first event until the run has written all of its
// output, so the rest waits as a batch of many events.
func TestFrontStreamedRunNotifies(t *testing.T) {
	written := make(chan struct{})
	e, _ := newExecEnv(t, func(job sandbox.Job) (*sandbox.Result, error) {
		job.Observer.Started(0)
		for range 5 {
			job.Observer.Log(sandbox.StreamStdout, []byte("line\n"))
		}
		close(written)
		return &sandbox.Result{Status: sandbox.StatusCompleted, Output: json.RawMessage(`{}`)}, nil
	})
	var mu sync.Mutex
	var methods []string
	var seqs []uint64
	var types []string
	var once sync.Once
	notify := func(_ context.Context, method string, value any) error {
		params := encodeParams(t, value)
		once.Do(func() {
			select {
			case <-written:
			case <-time.After(time.Minute): // safety net only
			}
		})
		var ev struct {
			Seq     uint64 `json:"seq"`
			Type    string `json:"type"`
			FromSeq uint64 `json:"from_seq"`
		}
		require.NoError(t, json.Unmarshal(params, &ev))
		mu.Lock()
		defer mu.Unlock()
		methods = append(methods, method)
		seqs = append(seqs, ev.Seq)
		types = append(types, ev.Type)
		return nil
	}
	f := e.d.Front(metrics.FrontMCP)
	id, err := f.Authenticate("", nil)
	require.NoError(t, err)
	res, werr := f.Serve(t.Context(), &Request{Method: MethodRunCode, Identity: id, Remote: "test", Notify: notify,
		Params: json.RawMessage(`{"language":"python","code":"def main(a): pass","stream":true}`)})
	require.Nil(t, werr)
	assert.Contains(t, string(res), `"status":"completed"`)
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, types)
	assert.Equal(t, runs.EventStarted, types[0])
	assert.Equal(t, runs.EventFinished, types[len(types)-1])
	assert.GreaterOrEqual(t, seqs[len(seqs)-1], uint64(3), "started, the log, finished")
	for i, m := range methods {
		assert.Equal(t, MethodRunEvent, m)
		if i > 0 {
			assert.Greater(t, seqs[i], seqs[i-1])
		}
	}
}

// A Notifier's error ends the stream, and the call fails with it.
func TestFrontStreamNotifierErrorFailsCall(t *testing.T) {
	e, _ := newExecEnv(t, completed(`{}`))
	f := e.d.Front(metrics.FrontMCP)
	id, err := f.Authenticate("", nil)
	require.NoError(t, err)
	_, werr := f.Serve(t.Context(), &Request{Method: MethodRunCode, Identity: id, Remote: "test",
		Notify: func(context.Context, string, any) error { return context.Canceled },
		Params: json.RawMessage(`{"language":"python","code":"def main(a): pass","stream":true}`)})
	require.NotNil(t, werr, "the stream broke")
}

// Without a Notifier a streamed run and watch_run are refused as bad
// params, naming the front door's reason.
func TestFrontWithoutNotifierRefusesStream(t *testing.T) {
	e, _ := newExecEnv(t, completed(`{}`))
	f := e.d.Front(metrics.FrontMCP)
	id, err := f.Authenticate("", nil)
	require.NoError(t, err)
	_, werr := f.Serve(t.Context(), &Request{Method: MethodRunCode, Identity: id, NoStream: "send Accept: text/event-stream",
		Params: json.RawMessage(`{"language":"python","code":"x","stream":true}`)})
	require.NotNil(t, werr)
	assert.Equal(t, transport.StringInvalidParams, werr.EffectiveCode())
	assert.Contains(t, werr.Error(), "send Accept: text/event-stream")
}
