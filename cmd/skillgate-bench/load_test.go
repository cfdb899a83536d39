package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/transport"
)

func TestLoadCount(t *testing.T) {
	addr := startGateway(t, 0)
	tests := []struct {
		name          string
		method        string
		conns, depth  int
		size          int
		requests      int
		wantErrs      uint64
		wantErrorCode string
	}{
		{"keepalive pipelined", "_Keepalive", 3, 16, 100, 1000, 0, ""},
		{"echo out of order", "Echo", 2, 32, 4096, 500, 0, ""},
		{"single in flight", "_Keepalive", 1, 1, 0, 50, 0, ""},
		{"error answers", "nope", 2, 4, 0, 40, 40, transport.StringMethodNotFound},
		{"more conns than requests", "_Keepalive", 5, 2, 0, 3, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := loadConfig{
				Target: target{Addr: addr}, Conns: tt.conns, Depth: tt.depth, Requests: tt.requests,
				Method: tt.method, Params: []byte(`{}`), Size: tt.size,
			}
			res, err := runLoad(testCtx(t), cfg, testLog(t))
			require.NoError(t, err)
			assert.Equal(t, uint64(tt.requests), res.Responses, "first error: %v", res.FirstErr)
			assert.Equal(t, uint64(tt.requests), res.Latency.Count())
			assert.Equal(t, tt.wantErrs, res.Errors)
			if tt.wantErrorCode != "" {
				assert.Equal(t, tt.wantErrs, res.ErrorCodes[tt.wantErrorCode])
			}
			assert.Zero(t, res.ConnFailed, "%v", res.FirstErr)
			assert.Positive(t, res.Rate())
		})
	}
}

func TestLoadDuration(t *testing.T) {
	addr := startGateway(t, 0)
	cfg := loadConfig{
		Target: target{Addr: addr}, Conns: 2, Depth: 8, Duration: 200 * time.Millisecond,
		Warmup: 50 * time.Millisecond, Method: "_Keepalive", Params: []byte(`{}`),
	}
	res, err := runLoad(testCtx(t), cfg, testLog(t))
	require.NoError(t, err)
	assert.Positive(t, res.Responses)
	assert.Equal(t, res.Responses, res.Latency.Count())
	assert.GreaterOrEqual(t, res.Elapsed, 200*time.Millisecond)
	assert.Equal(t, 2, res.Conns)
}

func TestLoadNoServer(t *testing.T) {
	addr, err := freeAddr()
	require.NoError(t, err)
	cfg := loadConfig{Target: target{Addr: addr, Timeout: time.Second}, Conns: 2, Requests: 1, Method: "_Keepalive", Params: []byte(`{}`)}
	res, err := runLoad(testCtx(t), cfg, testLog(t))
	require.ErrorIs(t, err, errNoConns)
	assert.Equal(t, 2, res.ConnFailed)
}

func TestLoadBadParams(t *testing.T) {
	_, err := runLoad(testCtx(t), loadConfig{Method: "_Keepalive", Params: []byte(`[]`)}, testLog(t))
	require.ErrorIs(t, err, errBadParams)
}

func TestSplitQuota(t *testing.T) {
	assert.Equal(t, []int64{4, 3, 3}, splitQuota(10, 3))
	assert.Equal(t, []int64{1, 0, 0}, splitQuota(1, 3))
	assert.Equal(t, []int64{-1, -1}, splitQuota(0, 2))
}
