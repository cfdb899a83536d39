package session

import (
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/transport"
)

// closeData returns the data object of a _CloseReason's error, every
// member decoded (numbers as json.Number).
func closeData(t *testing.T, m *wireMsg) map[string]any {
	t.Helper()
	var p struct {
		Error struct {
			Data map[string]json.RawMessage `json:"data"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(m.Params, &p))
	out := make(map[string]any, len(p.Error.Data))
	for k, raw := range p.Error.Data {
		var v any
		require.NoError(t, json.Unmarshal(raw, &v))
		out[k] = v
	}
	return out
}

// checkCloseData asserts that a _CloseReason carries a details string and
// exactly the given numbers in its data, beside string_code (and retry
// where the error has one).
func checkCloseData(t *testing.T, m *wireMsg, numbers map[string]float64) {
	t.Helper()
	data := closeData(t, m)
	details, ok := data["details"].(string)
	require.True(t, ok, "details must be a string: %v", data)
	assert.NotEmpty(t, details)
	for k, want := range numbers {
		assert.Equal(t, want, data[k], "data.%s in %v", k, data)
	}
	for k := range data {
		switch k {
		case "string_code", "details", "retry":
		default:
			_, expected := numbers[k]
			assert.True(t, expected, "unexpected data.%s in %v", k, data)
		}
	}
}

// Issue 26, item 18: every _CloseReason the gateway sends carries details
// and, in its data, the numbers behind it. Those of the timed reasons are
// checked in a synctest bubble below; these run over every transport.
func TestCloseReasonsCarryDetails(t *testing.T) {
	forEachKind(t, func(c *Config) {
		c.MaxInitFailures = 2
		c.DrainTimeout = 7 * time.Second
	}, func(t *testing.T, f *fixture) {
		t.Run("parse_error", func(t *testing.T) {
			p := f.dial()
			p.writeRaw("0000000g:{\"a\":\"b!\"}\n")
			checkCloseData(t, p.expectAbort(transport.CodeParseError, transport.StringParseError), nil)
		})
		t.Run("parse_error frame too large", func(t *testing.T) {
			p := f.dial()
			p.writeRaw("00010001:")
			m := p.expectAbort(transport.CodeParseError, transport.StringParseError)
			checkCloseData(t, m, map[string]float64{"frame_bytes": 0x10001, "max_message_size": 64 << 10})
		})
		t.Run("parse_error in the body", func(t *testing.T) {
			p := f.dial()
			p.writeRaw("00000002:{x\n")
			m := p.expectAbort(transport.CodeParseError, transport.StringParseError)
			checkCloseData(t, m, map[string]float64{"offset": 1})
		})
		t.Run("invalid_message", func(t *testing.T) {
			p := f.dial()
			p.send(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":1}`)
			checkCloseData(t, p.expectAbort(transport.CodeInvalidRequest, transport.StringInvalidRequest), nil)
		})
		t.Run("init_failed", func(t *testing.T) {
			// The handler's AUTH_REQUIRED has no details of its own.
			p := f.dial()
			require.NotNil(t, p.call("Initialize", `{"token":"bad"}`).Error)
			p.request("Initialize", `{"token":"bad"}`)
			p.recv()
			m := p.expectAbort(transport.CodeApplication, "AUTH_REQUIRED")
			checkCloseData(t, m, map[string]float64{"failed_attempts": 2})
			assert.Contains(t, m.CloseError.Error.Data.Details, "2 failed Initialize attempts")
		})
		t.Run("shutdown", func(t *testing.T) {
			p := f.dial()
			p.initialize()
			go func() { _ = f.srv.Shutdown(t.Context()) }()
			m := p.expectAbort(transport.CodeApplication, transport.StringServerShutdown)
			checkCloseData(t, m, map[string]float64{"drain_timeout_ms": 7000})
		})
	})
}

// Past --max-connections the refused connection learns the limit.
func TestCloseReasonOverloadedCarriesLimit(t *testing.T) {
	for _, kind := range []string{"tcp", "tls"} {
		t.Run(kind, func(t *testing.T) {
			f := newFixture(t, kind, func(c *Config) { c.MaxConnections = 1 })
			f.dial().initialize()
			m := f.dial().expectAbort(transport.CodeApplication, transport.StringOverloaded)
			checkCloseData(t, m, map[string]float64{"max_connections": 1})
		})
	}
}

// The timed close reasons: a frame that does not complete, a probe that
// goes unanswered, no Initialize, and a drain that runs out of time.
func TestCloseReasonsOfTimeoutsCarryDetails(t *testing.T) {
	t.Run("frame_timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, p := pipeServer(t, func(c *Config) { c.InitTimeout, c.FrameTimeout = 0, 3*time.Second })
			defer func() { _ = srv.Close() }()
			p.writeRaw(`0000003f:{"jsonrpc":"2.0"`)
			m := p.expectAbort(transport.CodeParseError, transport.StringParseError)
			checkCloseData(t, m, map[string]float64{"frame_timeout_ms": 3000})
		})
	})
	t.Run("keepalive_timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, p := pipeServer(t, func(c *Config) { c.InitTimeout = 0 })
			defer func() { _ = srv.Close() }()
			require.Equal(t, transport.MethodKeepalive, p.recv().Method)
			m := p.expectAbort(transport.CodeKeepalive, transport.StringKeepalive)
			checkCloseData(t, m, map[string]float64{"keepalive_timeout_ms": 20000})
		})
	})
	t.Run("init_timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, p := pipeServer(t, func(c *Config) { c.InitTimeout = 5 * time.Second })
			defer func() { _ = srv.Close() }()
			m := p.expectAbort(transport.CodeApplication, transport.StringInitTimeout)
			checkCloseData(t, m, map[string]float64{"init_timeout_ms": 5000})
		})
	})
	t.Run("shutdown past the drain timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, p := pipeServer(t, func(c *Config) { c.InitTimeout, c.DrainTimeout = 0, 2*time.Second })
			defer func() { _ = srv.Close() }()
			p.initialize()
			p.request("Stubborn", `{}`)
			h := srv.handler.(*testHandler)
			<-h.started
			ctx, cancel := contextWithTimeout(t, 2*time.Second)
			defer cancel()
			go func() { _ = srv.Shutdown(ctx) }()
			m := p.expectAbort(transport.CodeApplication, transport.StringServerShutdown)
			checkCloseData(t, m, map[string]float64{"drain_timeout_ms": 2000})
			assert.Contains(t, m.CloseError.Error.Data.Details, "drain timeout passed")
			close(h.release)
		})
	})
}

// A frame that cannot fit beside the answers the peer has not read aborts
// with SLOW_READER naming the queued bytes, the frame and the bound.
func TestCloseReasonSlowReaderCarriesBytes(t *testing.T) {
	const bound = 16 << 10
	synctest.Test(t, func(t *testing.T) {
		srv, h, _, p, _ := gatedServer(t, func(c *Config) {
			c.MaxMessageSize, c.MaxQueuedBytes = bound, bound
		})
		defer func() { _ = srv.Close() }()
		p.initialize()
		n := bound + 1 - resultFrameLen("h-1", 0)
		p.send(`{"jsonrpc":"2.0","method":"Hold","params":{"n":` + itoa(n) + `},"id":"h-1"}`)
		<-h.started
		// The peer does not read this answer yet: its write stays under way.
		p.send(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"k-1"}`)
		synctest.Wait()
		h.release <- struct{}{}
		synctest.Wait()
		keepaliveAnswer := len(transport.AppendResult(nil, []byte(`"k-1"`), transport.EmptyObject)) + transport.FrameOverhead
		require.Equal(t, "k-1", *p.recv().ID)
		m := p.expectAbort(transport.CodeApplication, transport.StringSlowReader)
		checkCloseData(t, m, map[string]float64{
			"queued_bytes":     float64(keepaliveAnswer),
			"frame_bytes":      float64(bound + 1),
			"max_queued_bytes": bound,
		})
	})
}

// A handler's *Abort closes the connection with its error in the
// _CloseReason, under the close reason its code names, and no response.
func TestHandlerAbortReasons(t *testing.T) {
	for _, tc := range []struct {
		method, reason string
		code           int32
	}{
		{"AbortParse", "parse_error", transport.CodeParseError},
		{"AbortInvalid", "invalid_message", transport.CodeInvalidRequest},
	} {
		t.Run(tc.method, func(t *testing.T) {
			f := newFixture(t, "pipe", nil)
			p := f.dial()
			p.initialize()
			p.request(tc.method, `{}`)
			m := p.expectAbort(tc.code, transport.StringCodeFor(tc.code))
			assert.NotEmpty(t, m.CloseError.Error.Data.Details)
			require.Eventually(t, func() bool {
				return testutil.ToFloat64(f.metrics.ConnectionsClosed.WithLabelValues("pipe", tc.reason)) == 1
			}, 5*time.Second, time.Millisecond)
		})
	}
}
