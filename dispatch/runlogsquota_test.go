package dispatch

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/runs"
	"github.com/skillgate/skillgate/sandbox"
)

// recordLogs is the log text a run's record keeps, and whether it holds
// a gap.
func recordLogs(t *testing.T, e *env, owner, id string) (string, bool) {
	t.Helper()
	r, err := e.d.opts.Runs.Get(owner, id)
	require.NoError(t, err)
	var text strings.Builder
	gap := false
	require.NoError(t, r.Follow(t.Context(), 0, func(ev runs.Event) error {
		var d struct{ Text string }
		_ = json.Unmarshal(ev.Data, &d)
		text.WriteString(d.Text)
		gap = gap || ev.Type == runs.EventGap
		return nil
	}))
	return text.String(), gap
}

// A run's full logs are kept in its record only while they are counted
// against its identity's blob quota as its logs_blob: an identity whose
// quota refuses them keeps the preview and a gap in their place. A run
// that fails without a sandbox result (a cancelled one) stores its
// logs_blob too.
func TestRunLogsCountAgainstTheBlobQuota(t *testing.T) {
	logs := strings.Repeat("x", 4999) + "\n"
	fail := false
	e, _ := newOwnersEnv(t, func(job sandbox.Job) (*sandbox.Result, error) {
		job.Observer.Admitted()
		job.Observer.Log(sandbox.StreamStdout, []byte(logs))
		if fail {
			return nil, context.Canceled
		}
		return &sandbox.Result{Status: sandbox.StatusCompleted, Output: json.RawMessage(`{}`), Logs: logs[len(logs)-2048:]}, nil
	})
	alice, bob := e.as(tokenAlice)[0], e.as(tokenBob)[0]

	run := asyncRun(t, alice)
	require.NotEmpty(t, run.LogsBlob, "alice's quota takes the logs")
	text, gap := recordLogs(t, e, "alice", run.RunID)
	assert.Equal(t, logs, text)
	assert.False(t, gap)

	run = asyncRun(t, bob)
	assert.Empty(t, run.LogsBlob, "bob's 100-byte quota refuses them")
	assert.Equal(t, logs[len(logs)-2048:], run.LogsPreview)
	text, gap = recordLogs(t, e, "bob", run.RunID)
	assert.Zero(t, len(text), "nor does bob's record keep them")
	assert.True(t, gap, "a gap stands for them")

	fail = true
	run = asyncRun(t, alice)
	assert.Equal(t, "CANCELLED", run.Error.Type)
	require.NotEmpty(t, run.LogsBlob, "a cancelled run's logs are counted too")
	var r ReadBlobResult
	mustCall(t, alice, "read_blob", `{"blob_id":"`+run.LogsBlob+`","mode":"full"}`, &r)
	assert.Equal(t, logs, r.Content)
}
