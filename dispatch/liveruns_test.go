package dispatch

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/sandbox"
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
	require.Equal(t, sandbox.ErrTypeSandbox, run.Error.Type)
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
