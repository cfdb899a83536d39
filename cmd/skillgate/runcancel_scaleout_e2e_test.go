package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Behind HAProxy, a cancel_run that reaches the replica not running the
// run stops it: the request goes through the bucket to the replica that
// runs it, and the run ends CANCELLED.
func TestScaleOutCancelOnAnotherReplica(t *testing.T) {
	s := startScaleout(t)
	// leastconn puts two connections held open on the two replicas.
	a, b := dialLB(t, s.lb), dialLB(t, s.lb)
	var started runRef
	a.call(t, "run_code", map[string]any{"language": "python", "async": true, "timeout_ms": 600000,
		"code": "import time\ndef main(args):\n    print('working', flush=True)\n    time.sleep(300)"}, &started)
	require.NotEmpty(t, started.RunID)
	ra, rb := s.replicas[0], s.replicas[1]
	if ra.served(t, "run_code") == 0 {
		ra, rb = rb, ra
	}
	require.Equal(t, 1, ra.served(t, "run_code"), "A runs it")

	var st runRef
	b.call(t, "cancel_run", map[string]any{"run_id": started.RunID}, &st)
	assert.Equal(t, 1, rb.served(t, "cancel_run"), "B took the cancel")
	assert.Equal(t, 0, ra.served(t, "cancel_run"))

	var obj struct {
		Status string `json:"status"`
		Error  struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	for range 10 { // wait_ms is at most a minute; bounded
		b.call(t, "get_run", map[string]any{"run_id": started.RunID, "wait_ms": 60000}, &obj)
		if obj.Status != "running" {
			break
		}
	}
	assert.Equal(t, "failed", obj.Status)
	assert.Equal(t, "CANCELLED", obj.Error.Type, "the run was cancelled, not left to run its 300 s")
	a.call(t, "get_run", map[string]any{"run_id": started.RunID}, &obj)
	assert.Equal(t, "CANCELLED", obj.Error.Type, "A recorded it cancelled")
}
