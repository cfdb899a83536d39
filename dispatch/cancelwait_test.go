package dispatch

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/sandbox"
)

// slowStopRunner is a sandbox whose runs take stop to end once cancelled.
type slowStopRunner struct{ stop time.Duration }

func (r slowStopRunner) Run(ctx context.Context, job sandbox.Job) (*sandbox.Result, error) {
	job.Observer.Admitted()
	<-ctx.Done()
	time.Sleep(r.stop)
	return nil, ctx.Err()
}

// cancel_run waits up to 5 s for the run to end before it answers: a run
// that stops within that answers its final status, one that takes longer
// is answered as still running, exactly 5 s after the call.
func TestCancelRunWaitsFiveSeconds(t *testing.T) {
	for _, tc := range []struct {
		stop   time.Duration
		status string
		took   time.Duration
	}{
		{4 * time.Second, "failed", 4 * time.Second},
		{6 * time.Second, "running", 5 * time.Second},
	} {
		t.Run(tc.stop.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnvOpts(t, examplesDir(), 256<<10, func(o *Options) { o.Runner = slowStopRunner{stop: tc.stop} })
				c := e.httpFront("")
				res, werr := c.call("run_code", `{"language":"python","code":"x","async":true}`)
				require.Nil(t, werr)
				var ref struct {
					RunID string `json:"run_id"`
				}
				require.NoError(t, json.Unmarshal(res, &ref))

				start := time.Now()
				res, werr = c.call("cancel_run", `{"run_id":"`+ref.RunID+`"}`)
				require.Nil(t, werr)
				assert.Equal(t, tc.took, time.Since(start))
				var got struct {
					RunID  string `json:"run_id"`
					Status string `json:"status"`
				}
				require.NoError(t, json.Unmarshal(res, &got))
				assert.Equal(t, ref.RunID, got.RunID)
				assert.Equal(t, tc.status, got.Status)
				synctest.Wait()
				time.Sleep(tc.stop) // let the run end before the bubble does
			})
		})
	}
}
