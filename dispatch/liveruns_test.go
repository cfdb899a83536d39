package dispatch

import (
	"bytes"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/internal/runerror"
	"github.com/skillgate/skillgate/runs"
	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/transport"
)

// An async run refused by a full sandbox queue is refused at once with
// OVERLOADED and leaves no record behind.
func TestAsyncRunRefusedWhenOverloaded(t *testing.T) {
	e, _ := newExecEnv(t, func(sandbox.Job) (*sandbox.Result, error) { return nil, sandbox.ErrOverloaded })
	for _, c := range e.fronts() {
		_, err := c.call("run_code", `{"language":"python","code":"def main(a): pass","async":true}`)
		require.NotNil(t, err, c.name())
		require.Equal(t, transport.StringOverloaded, err.EffectiveCode(), c.name())
		res, err := c.call("list_runs", `{}`)
		require.Nil(t, err)
		require.JSONEq(t, `{"runs":[],"next_cursor":null}`, string(res), c.name())
	}
}

// A background run whose execution panics does not take the gateway down:
// its record finishes failed, and the panic is counted.
func TestAsyncRunPanicFinishesTheRecord(t *testing.T) {
	e, _ := newExecEnv(t, func(job sandbox.Job) (*sandbox.Result, error) {
		job.Observer.Admitted()
		panic("boom")
	})
	c := e.fronts()[0]
	res, werr := c.call("run_code", `{"language":"python","code":"def main(a): pass","async":true}`)
	require.Nil(t, werr)
	var ref struct {
		RunID string `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal(res, &ref))
	res, werr = c.call("get_run", `{"run_id":"`+ref.RunID+`","wait_ms":10000}`)
	require.Nil(t, werr)
	var run RunResult
	require.NoError(t, json.Unmarshal(res, &run))
	require.Equal(t, sandbox.StatusFailed, run.Status)
	require.Equal(t, runerror.Sandbox, run.Error.Type)
}

// A plain run is recorded too: get_run answers the same run object the
// call returned.
func TestPlainRunIsRecorded(t *testing.T) {
	e, _ := newExecEnv(t, completed(`{"sum":5}`))
	for _, c := range e.fronts() {
		res, werr := c.call("execute_skill", `{"name":"acme.math.add","args":{"a":2,"b":3}}`)
		require.Nil(t, werr)
		var run RunResult
		require.NoError(t, json.Unmarshal(res, &run))
		got, werr := c.call("get_run", `{"run_id":"`+run.RunID+`"}`)
		require.Nil(t, werr)
		require.JSONEq(t, string(res), string(got), c.name())
	}
}

// A streamed call whose client stops reading while the run writes far
// more than the connection's queue holds is compacted, not cut off: once
// the client reads again it gets gap events for what was dropped, seq
// accounted for throughout, finished last, then the response. The run
// finished meanwhile, so the client held nothing up.
func TestStreamedRunCompactsForAClientThatIsBehind(t *testing.T) {
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 768) // one 12 KiB log event
	written := make(chan struct{})
	e, _ := newExecEnv(t, func(job sandbox.Job) (*sandbox.Result, error) {
		job.Observer.Started(0)
		for range 200 { // 2.4 MiB, the queue holds 512 KiB
			job.Observer.Log(sandbox.StreamStdout, chunk)
		}
		close(written)
		return &sandbox.Result{Status: sandbox.StatusCompleted, Output: json.RawMessage(`{}`)}, nil
	})
	type seen struct {
		Seq     uint64 `json:"seq"`
		Type    string `json:"type"`
		FromSeq uint64 `json:"from_seq"`
	}
	var mu sync.Mutex
	var evs []seen
	var once sync.Once
	c := e.framedRawWith(func(cfg *session.Config) {
		cfg.OnNotification = func(_ *session.Conn, _ string, params []byte) {
			once.Do(func() { // a client that reads nothing until the run is done
				select {
				case <-written:
				case <-time.After(time.Minute): // safety net only
				}
			})
			var ev seen
			if json.Unmarshal(params, &ev) == nil {
				mu.Lock()
				evs = append(evs, ev)
				mu.Unlock()
			}
		}
	})
	_, err := c.Call(t.Context(), MethodInitialize, map[string]any{"protocol_version": "1.0"})
	require.NoError(t, err)
	res, err := c.Call(t.Context(), MethodRunCode, map[string]any{"language": "python", "code": "def main(a): pass", "stream": true})
	require.NoError(t, err)
	require.Contains(t, string(res), `"status":"completed"`)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, runs.EventStarted, evs[0].Type)
	require.Equal(t, runs.EventFinished, evs[len(evs)-1].Type)
	require.Equal(t, uint64(202), evs[len(evs)-1].Seq, "started, 200 log events, finished")
	gaps, prev := 0, uint64(0)
	for _, ev := range evs {
		if ev.FromSeq != 0 {
			require.Equal(t, prev+1, ev.FromSeq, "%+v", ev)
			gaps++
		} else {
			require.Equal(t, prev+1, ev.Seq, "%+v", ev)
		}
		prev = ev.Seq
	}
	require.Positive(t, gaps, "%d events for 202 seqs", len(evs))
}
