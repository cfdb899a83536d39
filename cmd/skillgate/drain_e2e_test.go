package main

import (
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDrainDelayServesOn: after SIGTERM the gateway says it is not ready
// but keeps accepting connections for --drain-delay, so that load
// balancers polling /readyz stop routing to it first; a second signal
// ends the delay at once.
func TestDrainDelayServesOn(t *testing.T) {
	g := startGateway(t, "--drain-delay", "60s")
	require.NoError(t, g.cmd.Process.Signal(syscall.SIGTERM))
	g.waitLog(t, "not ready; serving on while load balancers stop routing here")

	resp, err := http.Get("http://" + g.addrs["metrics"] + "/readyz")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), "draining")

	out, stderr, code := runCLI(t, "call", "--addr", g.addrs["tcp"], "_Keepalive", "{}")
	assert.Equal(t, 0, code, "a new connection is still served during the delay: %s", stderr)
	assert.JSONEq(t, `{}`, out)

	require.NoError(t, g.cmd.Process.Signal(syscall.SIGTERM))
	g.waitLog(t, "second signal: closing at once")
	exited := make(chan error, 1)
	go func() { exited <- g.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the second signal did not end the drain delay")
	}
}
