package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cancelledRuns reads skillgate_sandbox_runs_total for cancelled run_code
// runs from the gateway's real Prometheus registry.
func cancelledRuns(t *testing.T, metricsAddr string) float64 {
	t.Helper()
	const series = `skillgate_sandbox_runs_total{kind="run_code",reason="cancelled",status="failed"} `
	for _, line := range strings.Split(scrape(t, "http://"+metricsAddr+"/metrics"), "\n") {
		if v, ok := strings.CutPrefix(line, series); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err)
			return f
		}
	}
	return 0
}

// A run stopped by cancel_run, by its caller's disconnect, or by MCP's
// notifications/cancelled is counted once, with reason "cancelled": not
// as an exception, and not left out.
func TestCancelledRunsAreCounted(t *testing.T) {
	requireSandbox(t)
	g := startGateway(t, "--sandbox-workers", "2", "--sandbox-warm-pool", "0")
	metricsAddr := g.addrs["metrics"]
	sleeper := `{"language":"python","code":"import time\ndef main(args):\n    time.sleep(300)\n","timeout_ms":600000`
	count := func(t *testing.T, want float64, what string) {
		t.Helper()
		waitFor(t, what, func() bool { return cancelledRuns(t, metricsAddr) >= want })
		assert.Equal(t, want, cancelledRuns(t, metricsAddr), what)
		waitFor(t, "the worker to be free", func() bool { return sandboxRunning(t, metricsAddr) == "0" })
	}

	t.Run("cancel_run", func(t *testing.T) {
		lc := dialLive(t, g.addrs["tcp"], nil, "")
		var started runRef
		require.NoError(t, lc.call("run_code", sleeper+`,"async":true}`, &started))
		waitFor(t, "the run to start", func() bool { return sandboxRunning(t, metricsAddr) == "1" })
		var st runRef
		require.NoError(t, lc.call("cancel_run", `{"run_id":"`+started.RunID+`"}`, &st))
		assert.Equal(t, "failed", st.Status)
		count(t, 1, "the run stopped by cancel_run")
	})

	t.Run("disconnect", func(t *testing.T) {
		lc := dialLive(t, g.addrs["tcp"], nil, "")
		go func() { _ = lc.call("run_code", sleeper+`}`, nil) }()
		waitFor(t, "the run to start", func() bool { return sandboxRunning(t, metricsAddr) == "1" })
		require.NoError(t, lc.conn.Close())
		count(t, 2, "the run whose caller went away")
	})

	t.Run("notifications/cancelled", func(t *testing.T) {
		cs, err := connectHTTP(t, "http://"+g.addrs["http"]+"/mcp", "", nil, nil)
		require.NoError(t, err)
		cancelSleepingMCPRun(t, cs, metricsAddr)
		count(t, 3, "the run the MCP client cancelled")
	})

	// The series exists from the start, at zero: it must have stayed there.
	exceptions := `skillgate_sandbox_runs_total{kind="run_code",reason="exception",status="failed"} 0` + "\n"
	assert.Contains(t, scrape(t, "http://"+metricsAddr+"/metrics"), exceptions, "no cancelled run counted as an exception")
}
