package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 9 item 13, HTTP side: a call still running when --drain-timeout
// passes is answered SERVER_SHUTDOWN before its connection closes, and the
// gateway still exits 0.
func TestHTTPDrainAnswersInFlight(t *testing.T) {
	requireSandbox(t)
	g := startGateway(t, "--sandbox-workers", "1", "--sandbox-warm-pool", "0", "--drain-timeout", "500ms")
	type reply struct {
		body string
		err  error
	}
	done := make(chan reply, 1)
	go func() {
		resp, err := http.Post("http://"+g.addrs["http"]+"/rpc", "application/json", strings.NewReader(
			`{"jsonrpc":"2.0","id":"slow","method":"run_code","params":{"language":"python",`+
				`"code":"import time\ndef main(args):\n    time.sleep(120)\n","timeout_ms":300000}}`))
		if err != nil {
			done <- reply{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		done <- reply{string(b), err}
	}()
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + g.addrs["metrics"] + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), `skillgate_rpc_inflight{front="http"} 1`)
	}, 60*time.Second, 20*time.Millisecond, "the run is in flight")

	require.NoError(t, g.cmd.Process.Signal(syscall.SIGTERM))
	r := <-done
	require.NoError(t, r.err)
	var a struct {
		ID    string
		Error struct {
			Data struct {
				StringCode string `json:"string_code"`
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(r.body), &a), "%s", r.body)
	assert.Equal(t, "slow", a.ID)
	assert.Equal(t, "SERVER_SHUTDOWN", a.Error.Data.StringCode)
	require.NoError(t, g.cmd.Wait(), "a drained gateway exits 0")
}
