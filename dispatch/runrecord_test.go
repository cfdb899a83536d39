package dispatch

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/internal/runerror"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/transport"
)

// asyncRun starts a background run_code and returns its run object once
// it has ended.
func asyncRun(t *testing.T, c caller) RunResult {
	t.Helper()
	res, werr := c.call("run_code", `{"language":"python","code":"def main(a): pass","async":true}`)
	require.Nil(t, werr, "%v", werr)
	var ref struct {
		RunID string `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal(res, &ref))
	res, werr = c.call("get_run", `{"run_id":"`+ref.RunID+`","wait_ms":30000}`)
	require.Nil(t, werr)
	var run RunResult
	require.NoError(t, json.Unmarshal(res, &run))
	require.NotEqual(t, "running", run.Status)
	return run
}

// A background run that ends normally is no panic: it is counted as
// none, and its run object stands.
func TestAsyncRunCompletesWithoutPanic(t *testing.T) {
	e, _ := newExecEnv(t, func(job sandbox.Job) (*sandbox.Result, error) {
		job.Observer.Admitted()
		return &sandbox.Result{Status: sandbox.StatusCompleted, Output: json.RawMessage(`{"x":1}`)}, nil
	})
	run := asyncRun(t, e.fronts()[1])
	assert.Equal(t, sandbox.StatusCompleted, run.Status)
	assert.JSONEq(t, `{"x":1}`, string(run.Output))
	assert.Zero(t, testutil.ToFloat64(e.metrics.Panics))
}

// A run the gateway's shutdown stopped is INTERRUPTED with a retry hint;
// one stopped by a cancel is CANCELLED without one (a retry would only be
// cancelled again). Its logs_preview is the end of what it logged.
func TestRunStoppedWithoutResult(t *testing.T) {
	logs := strings.Repeat("0123456789", 300) + "the end\n" // over the 2048-byte preview
	for _, tc := range []struct {
		err   error
		typ   string
		retry *transport.Retry
	}{
		{sandbox.ErrClosed, runerror.Interrupted, &transport.Retry{SuggestedDelayMS: 1000, MaxAttempts: 2}},
		{context.Canceled, StringCanceled, nil},
	} {
		e, _ := newExecEnv(t, func(job sandbox.Job) (*sandbox.Result, error) {
			job.Observer.Admitted()
			job.Observer.Log(sandbox.StreamStdout, []byte(logs))
			return nil, tc.err
		})
		run := asyncRun(t, e.fronts()[1])
		assert.Equal(t, sandbox.StatusFailed, run.Status)
		require.NotNil(t, run.Error)
		assert.Equal(t, tc.typ, run.Error.Type)
		assert.Equal(t, tc.retry, run.Retry, tc.typ)
		assert.Equal(t, logs[len(logs)-2048:], run.LogsPreview, "the last 2048 bytes")
	}
}

// Logs longer than the preview are kept whole as a text/plain blob of the
// caller, named by logs_blob; logs the preview holds whole are not.
func TestFullLogsKeptAsBlob(t *testing.T) {
	for _, tc := range []struct {
		logs, preview string
		blob          bool
	}{
		{"hello\n", "hello\n", false},
		{strings.Repeat("x", 5000), strings.Repeat("x", 2048), true},
	} {
		e, _ := newExecEnv(t, func(job sandbox.Job) (*sandbox.Result, error) {
			job.Observer.Log(sandbox.StreamStdout, []byte(tc.logs))
			return &sandbox.Result{Status: sandbox.StatusCompleted, Output: json.RawMessage(`{}`), Logs: tc.preview}, nil
		})
		for _, c := range e.fronts() {
			var run RunResult
			mustCall(t, c, "run_code", `{"language":"python","code":"def main(a): pass"}`, &run)
			assert.Equal(t, tc.preview, run.LogsPreview)
			if !tc.blob {
				assert.Empty(t, run.LogsBlob, "%s: the preview holds the logs", c.name())
				continue
			}
			require.NotEmpty(t, run.LogsBlob, c.name())
			var r ReadBlobResult
			mustCall(t, c, "read_blob", `{"blob_id":"`+run.LogsBlob+`","mode":"full"}`, &r)
			assert.Equal(t, tc.logs, r.Content, c.name())
			assert.Equal(t, "text/plain", r.Kind)
		}
	}
}

// A run's events name the request that started it as request_id: a
// streamed call's id; a run started in the background has none.
func TestRunEventsCarryRequestID(t *testing.T) {
	e, _ := newExecEnv(t, func(job sandbox.Job) (*sandbox.Result, error) {
		if job.Observer.Admitted != nil {
			job.Observer.Admitted()
		}
		job.Observer.Started(0)
		job.Observer.Progress(sandbox.Progress{Done: 0.5})
		return &sandbox.Result{Status: sandbox.StatusCompleted, Output: json.RawMessage(`{}`)}, nil
	})
	var mu sync.Mutex
	var events []map[string]any
	notify := func(_ context.Context, _ string, value any) error {
		params := encodeParams(t, value)
		var ev map[string]any
		require.NoError(t, json.Unmarshal(params, &ev))
		mu.Lock()
		defer mu.Unlock()
		events = append(events, ev)
		return nil
	}
	f := e.d.Front(metrics.FrontMCP)
	id, err := f.Authenticate("", nil)
	require.NoError(t, err)
	_, werr := f.Serve(t.Context(), &Request{Method: MethodRunCode, Identity: id, Remote: "test", Notify: notify, ID: "req-7",
		Params: json.RawMessage(`{"language":"python","code":"def main(a): pass","stream":true}`)})
	require.Nil(t, werr)
	mu.Lock()
	require.NotEmpty(t, events)
	progress := 0
	for _, ev := range events {
		assert.Equal(t, "req-7", ev["request_id"], "%v", ev)
		if ev["type"] == "progress" {
			progress++
			assert.Equal(t, 0.5, ev["progress"], "%v", ev)
		}
	}
	assert.Equal(t, 1, progress, "the run's progress report")
	events = nil
	mu.Unlock()

	res, werr := f.Serve(t.Context(), &Request{Method: MethodRunCode, Identity: id, Remote: "test", ID: "req-8",
		Params: json.RawMessage(`{"language":"python","code":"def main(a): pass","async":true}`)})
	require.Nil(t, werr)
	var ref struct {
		RunID string `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal(res, &ref))
	res, werr = f.Serve(t.Context(), &Request{Method: "watch_run", Identity: id, Remote: "test", Notify: notify, ID: "req-9",
		Params: json.RawMessage(`{"run_id":"` + ref.RunID + `"}`)})
	require.Nil(t, werr)
	var run RunResult
	require.NoError(t, json.Unmarshal(res, &run))
	assert.Equal(t, sandbox.StatusCompleted, run.Status, "watch_run answers the run object")
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, events)
	for _, ev := range events {
		assert.NotContains(t, ev, "request_id", "a background run has no request: %v", ev)
	}
}
