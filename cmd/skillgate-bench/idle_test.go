package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIdleHoldsThroughKeepalives(t *testing.T) {
	addr := startGateway(t, 50*time.Millisecond)
	cfg := idleConfig{
		Target: target{Addr: addr, Timeout: 5 * time.Second}, Conns: 20, Rounds: 2,
		HoldMax: 20 * time.Second, ServerPID: os.Getpid(), DialConcurrency: 8,
	}
	res, err := runIdle(testCtx(t), cfg, testLog(t))
	require.NoError(t, err)
	assert.Equal(t, 20, res.Conns)
	assert.Zero(t, res.Failed)
	assert.Zero(t, res.Dead, res.FirstErr)
	assert.GreaterOrEqual(t, res.Probes, uint64(40))
	assert.Positive(t, res.Before.RSS)
	assert.Positive(t, res.After.RSS)
}

func TestIdleNeedsPID(t *testing.T) {
	_, err := runIdle(testCtx(t), idleConfig{Conns: 1}, testLog(t))
	require.ErrorIs(t, err, errUsage)
}

func TestIdleNoServer(t *testing.T) {
	addr, err := freeAddr()
	require.NoError(t, err)
	cfg := idleConfig{Target: target{Addr: addr, Timeout: time.Second}, Conns: 3, ServerPID: os.Getpid()}
	_, err = runIdle(testCtx(t), cfg, testLog(t))
	require.ErrorIs(t, err, errNoConns)
}

// TestWorkerProtocol runs the idle-hold side in-process over pipes.
func TestWorkerProtocol(t *testing.T) {
	addr := startGateway(t, 50*time.Millisecond)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- runWorker(testCtx(t), target{Addr: addr, Timeout: 5 * time.Second}, 5, 0, 4, false, inR, outW)
		_ = outW.Close()
	}()
	out := bufio.NewScanner(outR)
	var st holdStatus
	deadline := time.Now().Add(20 * time.Second)
	for st.Probes < 5 && time.Now().Before(deadline) {
		_, err := io.WriteString(inW, "status\n")
		require.NoError(t, err)
		require.True(t, out.Scan())
		require.NoError(t, json.Unmarshal(out.Bytes(), &st))
		assert.Equal(t, 5, st.Open)
		time.Sleep(20 * time.Millisecond)
	}
	assert.GreaterOrEqual(t, st.Probes, uint64(5))
	require.NoError(t, inW.Close())
	require.NoError(t, <-done)
}
