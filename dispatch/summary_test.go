package dispatch

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/sandbox"
)

// failedSummary runs code that fails with a ValueError carrying message
// and returns the run's summary and error message.
func failedSummary(t *testing.T, message string) (string, string) {
	t.Helper()
	e, _ := newExecEnv(t, func(sandbox.Job) (*sandbox.Result, error) {
		return &sandbox.Result{Status: sandbox.StatusFailed, Error: &sandbox.RunError{Type: "ValueError", Message: message}}, nil
	})
	res, werr := e.httpFront("").call("run_code", `{"language":"python","code":"x"}`)
	require.Nil(t, werr)
	var run RunResult
	require.NoError(t, json.Unmarshal(res, &run))
	require.NotNil(t, run.Error)
	return run.Summary, run.Error.Message
}

// A failed run's summary quotes the error's message whole up to 200
// bytes and cuts a longer one at 200 bytes (never inside a character),
// marked; the error object keeps the whole message.
func TestFailureSummaryQuotesUpTo200Bytes(t *testing.T) {
	at := strings.Repeat("m", 200)
	summary, msg := failedSummary(t, at)
	assert.True(t, strings.HasSuffix(summary, ": ValueError: "+at), summary)
	assert.Equal(t, at, msg)

	over := strings.Repeat("n", 200) + "X"
	summary, msg = failedSummary(t, over)
	assert.True(t, strings.HasSuffix(summary, ": ValueError: "+strings.Repeat("n", 200)+"…"), summary)
	assert.Equal(t, over, msg)

	cut := strings.Repeat("c", 199) + "é" // the 200th byte starts a character
	summary, _ = failedSummary(t, cut)
	assert.True(t, strings.HasSuffix(summary, ": ValueError: "+strings.Repeat("c", 199)+"…"), summary)
	assert.NotContains(t, summary, "\ufffd")
}
