package session

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skillgate/skillgate/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// forEachKind runs body over a net.Pipe, TCP, TLS and mutual TLS.
func forEachKind(t *testing.T, mutate func(*Config), body func(t *testing.T, f *fixture)) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) { body(t, newFixture(t, kind, mutate)) })
	}
}

// Spec: "abort the connection": a _CloseReason with the spec's code, then
// close. Every malformed input is covered with the code it must produce.
func TestAbortOnMalformedInput(t *testing.T) {
	const parse, invalid = transport.CodeParseError, transport.CodeInvalidRequest
	cases := []struct {
		name string
		wire string
		code int32
	}{
		{"non-hex length", "0000000g:{\"a\":\"b!\"}\n", parse},
		{"plus sign in length", "+000000a:{\"a\":\"b!\"}\n", parse},
		{"missing colon", "0000000a;{\"a\":\"b!\"}\n", parse},
		{"missing newline", "0000000a:{\"a\":\"b!\"}X", parse},
		{"declared length over the limit", "7fffffff:", parse},
		{"empty body", "00000000:\n", parse},
		// The body is the message with "no leading or trailing whitespace".
		{"leading space", "0000003d: {\"jsonrpc\":\"2.0\",\"method\":\"_Keepalive\",\"params\":{},\"id\":\"1\"}\n", parse},
		{"leading CR LF", "0000003e:\r\n{\"jsonrpc\":\"2.0\",\"method\":\"_Keepalive\",\"params\":{},\"id\":\"1\"}\n", parse},
		{"trailing newline", "0000003d:{\"jsonrpc\":\"2.0\",\"method\":\"_Keepalive\",\"params\":{},\"id\":\"1\"}\n\n", parse},
		{"trailing tab", "0000003d:{\"jsonrpc\":\"2.0\",\"method\":\"_Keepalive\",\"params\":{},\"id\":\"1\"}\t\n", parse},
		{"unbalanced braces", frame(`{"jsonrpc":"2.0"`), parse},
		{"invalid utf-8", frame("{\"jsonrpc\":\"2.0\",\"method\":\"Echo\",\"params\":{\"a\":\"\xff\"},\"id\":\"1\"}"), parse},
		{"error code not an integer", frame(`{"jsonrpc":"2.0","error":{"code":3.0001,"message":""},"id":"gw-1"}`), parse},
		{"batch", frame(`[{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"1"}]`), invalid},
		{"numeric id", frame(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":1}`), invalid},
		{"array params", frame(`{"jsonrpc":"2.0","method":"Echo","params":[1],"id":"1"}`), invalid},
		{"missing params", frame(`{"jsonrpc":"2.0","method":"Echo","id":"1"}`), invalid},
		{"jsonrpc 1.0", frame(`{"jsonrpc":"1.0","method":"Echo","params":{},"id":"1"}`), invalid},
		{"no jsonrpc", frame(`{"method":"Echo","params":{},"id":"1"}`), invalid},
		{"result not an object", frame(`{"jsonrpc":"2.0","result":[],"id":"gw-1"}`), invalid},
		{"response without id", frame(`{"jsonrpc":"2.0","result":{}}`), invalid},
		{"error without message", frame(`{"jsonrpc":"2.0","error":{"code":1},"id":"gw-1"}`), invalid},
		{"_CloseReason as a request", frame(`{"jsonrpc":"2.0","method":"_CloseReason","params":{},"id":"1"}`), invalid},
		{"_Keepalive as a notification", frame(`{"jsonrpc":"2.0","method":"_Keepalive","params":{}}`), invalid},
		{"overlong id", frame(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"` + strings.Repeat("i", MaxIDLen+1) + `"}`), invalid},
	}
	forEachKind(t, nil, func(t *testing.T, f *fixture) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				p := f.dial()
				p.writeRaw(tc.wire)
				m := p.expectAbort(tc.code, transport.StringCodeFor(tc.code))
				assert.NotEmpty(t, m.CloseError.Error.Message)
				assert.NotEmpty(t, m.CloseError.Error.Data.Details)
			})
		}
	})
}

// Spec: an id MUST NOT be used more than once per connection; a receiver
// aborts on a reused id, whether the first request is in flight or done.
func TestReusedIDAborts(t *testing.T) {
	forEachKind(t, nil, func(t *testing.T, f *fixture) {
		t.Run("completed", func(t *testing.T) {
			p := f.dial()
			p.send(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"pt-1"}`)
			p.recv()
			p.send(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"pt-1"}`)
			p.expectAbort(transport.CodeInvalidRequest, transport.StringInvalidRequest)
		})
		t.Run("in flight", func(t *testing.T) {
			p := f.dial()
			p.initialize()
			p.send(`{"jsonrpc":"2.0","method":"Block","params":{},"id":"dup"}`)
			<-f.h.started
			p.send(`{"jsonrpc":"2.0","method":"Echo","params":{},"id":"dup"}`)
			p.expectAbort(transport.CodeInvalidRequest, transport.StringInvalidRequest)
		})
	})
}

// Spec: _Keepalive is answered with an empty result and the same id, before
// initialization too; uppercase hex lengths are accepted.
func TestKeepaliveAnsweredBeforeInitialize(t *testing.T) {
	forEachKind(t, nil, func(t *testing.T, f *fixture) {
		p := f.dial()
		p.writeRaw("0000003F:" + `{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"pt-1"}` + "\n")
		m := p.recv()
		require.NotNil(t, m.ID)
		assert.Equal(t, "pt-1", *m.ID)
		assert.JSONEq(t, `{}`, string(m.Result))
		assert.Nil(t, m.Error)
	})
}

// GreenPay checklist: each transport read returning one byte must work.
func TestOneByteWrites(t *testing.T) {
	forEachKind(t, nil, func(t *testing.T, f *fixture) {
		p := f.dial()
		wire := frame(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"pt-1"}`) +
			frame(`{"jsonrpc":"2.0","method":"Initialize","params":{},"id":"pt-2"}`)
		for i := range len(wire) {
			p.writeRaw(wire[i : i+1])
		}
		assert.Equal(t, "pt-1", *p.recv().ID)
		assert.Equal(t, "pt-2", *p.recv().ID)
	})
}

// Several frames in one write: all are answered, each exactly once.
func TestPipelinedRequests(t *testing.T) {
	forEachKind(t, func(c *Config) { c.MaxInflight = 1000 }, func(t *testing.T, f *fixture) {
		p := f.dial()
		p.initialize()
		var wire strings.Builder
		const n = 200
		for i := range n {
			method := "Echo"
			if i%3 == 0 {
				method = "_Keepalive"
			}
			wire.WriteString(frame(`{"jsonrpc":"2.0","method":"` + method + `","params":{"i":` + itoa(i) + `,"s":"ä"},"id":"p-` + itoa(i) + `"}`))
		}
		p.writeRaw(wire.String())
		seen := map[string]bool{}
		for range n {
			m := p.recv()
			require.NotNil(t, m.ID)
			require.False(t, seen[*m.ID], "duplicate response %s", *m.ID)
			seen[*m.ID] = true
			require.Nil(t, m.Error)
		}
		assert.Len(t, seen, n)
	})
}

// Initialization gating: application methods before Initialize get -32601
// JSONRPC_METHOD_NOT_FOUND; a second Initialize gets an application error.
func TestInitializationGating(t *testing.T) {
	forEachKind(t, nil, func(t *testing.T, f *fixture) {
		p := f.dial()
		m := p.call("Echo", `{}`)
		require.NotNil(t, m.Error)
		assert.Equal(t, int32(transport.CodeMethodNotFound), m.Error.Code)
		assert.Equal(t, transport.StringMethodNotFound, m.Error.Data.StringCode)

		m = p.call("Initialize", `{"token":"bad"}`)
		require.NotNil(t, m.Error, "failed initialization")
		assert.Equal(t, "AUTH_REQUIRED", m.Error.Data.StringCode)
		m = p.call("Echo", `{}`)
		assert.Equal(t, transport.StringMethodNotFound, m.Error.Data.StringCode)

		p.initialize()
		m = p.call("Echo", `{"x":1}`)
		require.Nil(t, m.Error)
		assert.JSONEq(t, `{"x":1}`, string(m.Result))

		m = p.call("Initialize", `{}`)
		require.NotNil(t, m.Error)
		assert.Equal(t, int32(transport.CodeApplication), m.Error.Code)
		assert.Equal(t, transport.StringAlreadyInitialized, m.Error.Data.StringCode)
	})
}

// Repeated failed initialization closes the connection.
func TestRepeatedInitFailureCloses(t *testing.T) {
	forEachKind(t, func(c *Config) { c.MaxInitFailures = 2 }, func(t *testing.T, f *fixture) {
		p := f.dial()
		m := p.call("Initialize", `{"token":"bad"}`)
		require.NotNil(t, m.Error)
		p.request("Initialize", `{"token":"bad"}`)
		p.recv()
		p.expectAbort(transport.CodeApplication, "AUTH_REQUIRED")
	})
}

// Spec: notifications MUST NOT be answered, _CloseReason must not close the
// connection, and unknown notifications are ignored.
func TestNotificationsNeverAnswered(t *testing.T) {
	forEachKind(t, nil, func(t *testing.T, f *fixture) {
		p := f.dial()
		p.send(`{"jsonrpc":"2.0","method":"_Info","params":{"message":"hello"}}`)
		p.send(`{"jsonrpc":"2.0","method":"_Info","params":"any data at all"}`)
		p.send(`{"jsonrpc":"2.0","method":"_Error","params":{"id":"gw-1","error":{"code":1,"message":"bad result"}}}`)
		p.send(`{"jsonrpc":"2.0","method":"_CloseReason","params":{"error":{"code":-32700,"message":"Parse error."}}}`)
		p.send(`{"jsonrpc":"2.0","method":"SomethingHappened","params":{}}`)
		p.send(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"pt-after"}`)
		m := p.recv()
		require.NotNil(t, m.ID, "first frame must be the keepalive answer, got %+v", m)
		assert.Equal(t, "pt-after", *m.ID)
		_, err := p.tryRecv(100 * time.Millisecond)
		require.Error(t, err, "nothing else may be sent")
	})
}

// Application errors are normal error responses carrying string_code and
// details; the connection lives on.
func TestApplicationErrors(t *testing.T) {
	forEachKind(t, nil, func(t *testing.T, f *fixture) {
		p := f.dial()
		p.initialize()
		m := p.call("Fail", `{}`)
		require.NotNil(t, m.Error)
		assert.Equal(t, int32(1), m.Error.Code)
		assert.Equal(t, "AMOUNT_TOO_HIGH", m.Error.Data.StringCode)
		assert.Equal(t, "limit 1000", m.Error.Data.Details)

		m = p.call("Panic", `{}`)
		assert.Equal(t, int32(transport.CodeInternalError), m.Error.Code)
		assert.Equal(t, transport.StringInternalError, m.Error.Data.StringCode)

		m = p.call("Plain", `{}`)
		assert.Equal(t, transport.StringInternalError, m.Error.Data.StringCode)
		assert.NotContains(t, m.Error.Message+m.Error.Data.Details, "secret")

		m = p.call("NotObject", `{}`)
		assert.Equal(t, transport.StringInternalError, m.Error.Data.StringCode)

		m = p.call("Nope", `{}`)
		assert.Equal(t, transport.StringMethodNotFound, m.Error.Data.StringCode)

		assert.Nil(t, p.call("Echo", `{}`).Error, "connection must survive")
		assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.Panics))
	})
}

// No message the server writes exceeds the message size limit.
func TestResponseTooLarge(t *testing.T) {
	forEachKind(t, nil, func(t *testing.T, f *fixture) {
		p := f.dial()
		p.initialize()
		m := p.call("Big", `{"n":100000}`)
		require.NotNil(t, m.Error)
		assert.Equal(t, transport.StringResponseTooLarge, m.Error.Data.StringCode)
		m = p.call("Big", `{"n":1000}`)
		require.Nil(t, m.Error)
	})
}

// Requests run concurrently, bounded per connection: past the bound they
// are refused with OVERLOADED and a retry hint, not an abort; a slow
// request never delays a keepalive.
func TestMaxInflight(t *testing.T) {
	forEachKind(t, func(c *Config) { c.MaxInflight = 2 }, func(t *testing.T, f *fixture) {
		p := f.dial()
		p.initialize()
		a, b := p.request("Block", `{}`), p.request("Block", `{}`)
		<-f.h.started
		<-f.h.started
		m := p.call("Echo", `{}`)
		require.NotNil(t, m.Error)
		assert.Equal(t, transport.StringOverloaded, m.Error.Data.StringCode)
		require.NotNil(t, m.Error.Data.Retry)
		assert.Positive(t, m.Error.Data.Retry.SuggestedDelayMS)
		assert.Nil(t, p.call("_Keepalive", `{}`).Error)
		f.h.release <- struct{}{}
		f.h.release <- struct{}{}
		got := map[string]bool{*p.recv().ID: true, *p.recv().ID: true}
		assert.Equal(t, map[string]bool{a: true, b: true}, got)
	})
}

// A response to an id the server never sent is reported with _Error and
// ignored; the connection lives.
func TestUnknownResponseID(t *testing.T) {
	forEachKind(t, nil, func(t *testing.T, f *fixture) {
		p := f.dial()
		p.send(`{"jsonrpc":"2.0","result":{},"id":"gw-999"}`)
		m := p.recv()
		assert.Equal(t, transport.MethodError, m.Method)
		assert.Nil(t, m.ID)
		assert.Contains(t, string(m.Params), `"id":"gw-999"`)
		assert.Nil(t, p.call("_Keepalive", `{}`).Error)
	})
}

// Server keepalive: sent with ids gw-1, gw-2, ...; unanswered, it aborts
// the connection with -32000 KEEPALIVE.
func TestServerKeepalive(t *testing.T) {
	mutate := func(c *Config) {
		c.KeepaliveInterval = 30 * time.Millisecond
		c.KeepaliveTimeout = 200 * time.Millisecond
	}
	forEachKind(t, mutate, func(t *testing.T, f *fixture) {
		p := f.dial()
		for i := 1; i <= 2; i++ {
			m := p.recv()
			require.Equal(t, transport.MethodKeepalive, m.Method)
			require.Equal(t, "gw-"+itoa(i), *m.ID)
			assert.JSONEq(t, `{}`, string(m.Params))
			p.send(`{"jsonrpc":"2.0","result":{},"id":"` + *m.ID + `"}`)
		}
		m := p.recv()
		require.Equal(t, "gw-3", *m.ID)
		p.expectAbort(transport.CodeKeepalive, transport.StringKeepalive)
		require.Eventually(t, func() bool {
			return testutil.ToFloat64(f.metrics.ConnectionsClosed.WithLabelValues(f.kind, "keepalive_timeout")) == 1
		}, 5*time.Second, 5*time.Millisecond)
	})
}

// A frame that has begun must complete within the frame timeout.
func TestFrameTimeout(t *testing.T) {
	forEachKind(t, func(c *Config) { c.FrameTimeout = 100 * time.Millisecond }, func(t *testing.T, f *fixture) {
		p := f.dial()
		p.writeRaw(`0000003f:{"jsonrpc":"2.0"`)
		m := p.expectAbort(transport.CodeParseError, transport.StringParseError)
		assert.Contains(t, m.CloseError.Error.Data.Details, "not completed")
	})
}

// A connection that never initializes is closed after the init timeout.
func TestInitTimeout(t *testing.T) {
	forEachKind(t, func(c *Config) { c.InitTimeout = 100 * time.Millisecond }, func(t *testing.T, f *fixture) {
		p := f.dial()
		p.expectAbort(transport.CodeApplication, transport.StringInitTimeout)
		q := f.dial()
		q.initialize()
		_, err := q.tryRecv(300 * time.Millisecond)
		assert.Error(t, err)
		assert.Nil(t, q.call("_Keepalive", `{}`).Error, "an initialized connection stays open")
	})
}

// Past --max-connections a new connection gets OVERLOADED and is closed;
// the existing ones are untouched.
func TestMaxConnections(t *testing.T) {
	for _, kind := range []string{"tcp", "tls"} {
		t.Run(kind, func(t *testing.T) {
			f := newFixture(t, kind, func(c *Config) { c.MaxConnections = 1 })
			p := f.dial()
			p.initialize()
			q := f.dial()
			q.expectAbort(transport.CodeApplication, transport.StringOverloaded)
			assert.Nil(t, p.call("Echo", `{}`).Error)
		})
	}
}

// Graceful shutdown: in-flight requests finish and are answered, new ones
// are refused, then SERVER_SHUTDOWN closes the connection.
func TestShutdownDrains(t *testing.T) {
	forEachKind(t, nil, func(t *testing.T, f *fixture) {
		p := f.dial()
		p.initialize()
		idle := f.dial()
		idle.initialize()
		id := p.request("Block", `{}`)
		<-f.h.started
		done := make(chan error, 1)
		go func() { done <- f.srv.Shutdown(t.Context()) }()
		idle.expectAbort(transport.CodeApplication, transport.StringServerShutdown)
		m := p.call("Echo", `{}`)
		require.NotNil(t, m.Error)
		assert.Equal(t, transport.StringServerShutdown, m.Error.Data.StringCode)
		f.h.release <- struct{}{}
		m = p.recvResponse(id)
		require.Nil(t, m.Error)
		p.expectAbort(transport.CodeApplication, transport.StringServerShutdown)
		require.NoError(t, <-done)
	})
}

// Past the drain timeout, in-flight requests are canceled and the
// connection is still told why it closes.
func TestShutdownDeadline(t *testing.T) {
	forEachKind(t, nil, func(t *testing.T, f *fixture) {
		p := f.dial()
		p.initialize()
		p.request("Block", `{}`)
		<-f.h.started
		ctx, cancel := contextWithTimeout(t, 50*time.Millisecond)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- f.srv.Shutdown(ctx) }()
		p.expectAbort(transport.CodeApplication, transport.StringServerShutdown)
		assert.Error(t, <-done)
	})
}

// A peer that stops reading while responses pile up is disconnected once
// its queue passes the byte bound, so it cannot pin memory.
func TestSlowReaderDisconnected(t *testing.T) {
	for _, kind := range []string{"pipe", "tcp"} {
		t.Run(kind, func(t *testing.T) {
			f := newFixture(t, kind, func(c *Config) {
				c.MaxQueuedBytes = 64 << 10
				c.WriteTimeout = 5 * time.Second
			})
			p := f.dial()
			p.initialize()
			var wire strings.Builder
			for i := range 400 {
				wire.WriteString(frame(`{"jsonrpc":"2.0","method":"Big","params":{"n":30000},"id":"b-` + itoa(i) + `"}`))
			}
			go func() { _, _ = p.nc.Write([]byte(wire.String())) }()
			require.Eventually(t, func() bool {
				return testutil.ToFloat64(f.metrics.ConnectionsClosed.WithLabelValues(kind, "slow_reader")) == 1
			}, 10*time.Second, 10*time.Millisecond)
		})
	}
}

// The client side: Dial, Call, errors, and automatic answers to the
// server's keepalives.
func TestClientConn(t *testing.T) {
	for _, kind := range []string{"tcp", "tls", "mtls"} {
		t.Run(kind, func(t *testing.T) {
			f := newFixture(t, kind, func(c *Config) {
				c.KeepaliveInterval = 20 * time.Millisecond
				c.KeepaliveTimeout = time.Second
			})
			cfg := ClientConfig()
			cfg.Metrics = f.metrics
			c, err := Dial(t.Context(), f.ln.Addr().String(), f.clientT, cfg, nil)
			require.NoError(t, err)
			defer c.Close()
			_, err = c.Call(t.Context(), "Initialize", map[string]any{"protocol_version": "1.0"})
			require.NoError(t, err)
			// The server probes every 20 ms: wait until the client has
			// answered several probes, then use the connection.
			require.Eventually(t, func() bool {
				return testutil.ToFloat64(f.metrics.KeepalivesSent) >= 3
			}, 10*time.Second, 5*time.Millisecond)
			res, err := c.Call(t.Context(), "Echo", json.RawMessage(`{"ä":[1,2]}`))
			require.NoError(t, err)
			assert.JSONEq(t, `{"ä":[1,2]}`, string(res))
			_, err = c.Call(t.Context(), "Fail", nil)
			var te *transport.Error
			require.ErrorAs(t, err, &te)
			assert.Equal(t, "AMOUNT_TOO_HIGH", te.StringCode)
		})
	}
}

func contextWithTimeout(t *testing.T, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), d)
}

// Mutual TLS makes a client certificate from the configured CA mandatory.
func TestMutualTLSRejects(t *testing.T) {
	f := newFixture(t, "mtls", nil)
	pki := getPKI(t)
	for name, conf := range map[string]*tls.Config{
		"no client certificate":     pki.clientTLS(nil),
		"certificate of another CA": pki.clientTLS(&pki.otherClient),
	} {
		t.Run(name, func(t *testing.T) {
			nc, err := net.Dial("tcp", f.ln.Addr().String())
			require.NoError(t, err)
			defer nc.Close()
			tc := tls.Client(nc, conf)
			_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
			err = tc.Handshake()
			if err == nil {
				// TLS 1.3 reports the server's refusal on the first read.
				_, err = tc.Read(make([]byte, 1))
			}
			require.Error(t, err)
		})
	}
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(f.metrics.ConnectionsClosed.WithLabelValues("mtls", "tls_handshake_failed")) == 2
	}, 5*time.Second, 10*time.Millisecond)
}

// Large answers produced on the read loop leave as they pile up, and the
// read loop pauses while half the queue bound waits: a client that
// pipelines many requests with large answers, and reads them, is slowed
// down by TCP, not mistaken for a slow reader.
func TestInlineAnswersDoNotPileUp(t *testing.T) {
	forEachKind(t, func(c *Config) { c.MaxQueuedBytes = 256 << 10 }, func(t *testing.T, f *fixture) {
		p := f.dial()
		p.initialize()
		var wire strings.Builder
		const n = 100
		for i := range n {
			wire.WriteString(frame(`{"jsonrpc":"2.0","method":"BigInline","params":{"n":30000},"id":"b-` + itoa(i) + `"}`))
		}
		go func() { _, _ = p.nc.Write([]byte(wire.String())) }()
		for range n {
			m := p.recv()
			require.NotNil(t, m.ID, "%+v", m)
			require.Nil(t, m.Error)
		}
		assert.Zero(t, testutil.ToFloat64(f.metrics.ConnectionsClosed.WithLabelValues(f.kind, "slow_reader")))
	})
}

// Spec: _Error notifications MUST NOT disturb active method requests; a
// received _CloseReason does not close the connection either. A request in
// flight while both arrive still completes and is answered.
func TestNotificationsDoNotDisturbRequests(t *testing.T) {
	forEachKind(t, nil, func(t *testing.T, f *fixture) {
		p := f.dial()
		p.initialize()
		id := p.request("Block", `{}`)
		<-f.h.started
		p.send(`{"jsonrpc":"2.0","method":"_Error","params":{"id":"` + id + `","error":{"code":1,"message":"bad"}}}`)
		p.send(`{"jsonrpc":"2.0","method":"_CloseReason","params":{"error":{"code":-32000,"message":"Keepalive timeout."}}}`)
		f.h.release <- struct{}{}
		m := p.recvResponse(id)
		require.Nil(t, m.Error)
		assert.JSONEq(t, `{"released":"`+id+`"}`, string(m.Result))
	})
}

// Issue 9, item 5: --frame-timeout bounds a frame from its first byte to
// its last, whatever the pace: a peer that dribbles one byte at a time,
// each well within the timeout, is still aborted once the frame as a whole
// is late.
func TestFrameTimeoutBoundsDribbledFrame(t *testing.T) {
	forEachKind(t, func(c *Config) { c.FrameTimeout = 300 * time.Millisecond }, func(t *testing.T, f *fixture) {
		p := f.dial()
		wire := frame(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"slow-1"}`)
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for i := range len(wire) {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				_ = p.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
				if _, err := p.nc.Write([]byte{wire[i]}); err != nil {
					return
				}
			}
		}()
		m := p.expectAbort(transport.CodeParseError, transport.StringParseError)
		assert.Contains(t, m.CloseError.Error.Data.Details, "not completed")
		require.Eventually(t, func() bool {
			return testutil.ToFloat64(f.metrics.ConnectionsClosed.WithLabelValues(f.kind, "frame_timeout")) == 1
		}, 5*time.Second, time.Millisecond)
	})
}

// Issue 9, item 14: Initialize completes before anything written after it
// is processed, so calls pipelined behind it in the same write see the
// initialized session, and pipelined attempts are answered in order: a
// failed one does not make the next, valid one ALREADY_INITIALIZED.
func TestPipelinedInitialize(t *testing.T) {
	forEachKind(t, nil, func(t *testing.T, f *fixture) {
		p := f.dial()
		p.writeRaw(frame(`{"jsonrpc":"2.0","method":"Initialize","params":{"token":"bad"},"id":"i-1"}`) +
			frame(`{"jsonrpc":"2.0","method":"Initialize","params":{},"id":"i-2"}`) +
			frame(`{"jsonrpc":"2.0","method":"Echo","params":{"n":1},"id":"e-1"}`) +
			frame(`{"jsonrpc":"2.0","method":"Echo","params":{"n":2},"id":"e-2"}`))
		got := map[string]*wireMsg{}
		for range 4 {
			m := p.recv()
			require.NotNil(t, m.ID, "%+v", m)
			got[*m.ID] = m
		}
		require.NotNil(t, got["i-1"].Error)
		assert.Equal(t, "AUTH_REQUIRED", got["i-1"].Error.Data.StringCode)
		assert.Nil(t, got["i-2"].Error, "a valid attempt after a failed one succeeds")
		for _, id := range []string{"e-1", "e-2"} {
			require.Nil(t, got[id].Error, "%s: %+v", id, got[id].Error)
		}
		assert.JSONEq(t, `{"n":2}`, string(got["e-2"].Result))
	})
}

// After the last allowed failed attempt, requests pipelined behind it get
// no answer (no SERVER_SHUTDOWN either): the connection closes with the
// attempt's error as its _CloseReason, counted as init_failed.
func TestPipelinedInitFailuresClose(t *testing.T) {
	forEachKind(t, nil, func(t *testing.T, f *fixture) {
		p := f.dial()
		var wire strings.Builder
		for i := range DefaultMaxInitFailures {
			wire.WriteString(frame(`{"jsonrpc":"2.0","method":"Initialize","params":{"token":"bad"},"id":"i-` + itoa(i) + `"}`))
		}
		wire.WriteString(frame(`{"jsonrpc":"2.0","method":"Echo","params":{},"id":"e-1"}`))
		wire.WriteString(frame(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"k-1"}`))
		// Not all of it is read (on a pipe the write would never end).
		go func() { _, _ = p.nc.Write([]byte(wire.String())) }()
		for i := range DefaultMaxInitFailures {
			m := p.recv()
			require.NotNil(t, m.ID, "%+v", m)
			assert.Equal(t, "i-"+itoa(i), *m.ID)
			require.NotNil(t, m.Error)
			assert.Equal(t, "AUTH_REQUIRED", m.Error.Data.StringCode)
		}
		m := p.recv()
		require.Equal(t, transport.MethodCloseReason, m.Method, "nothing is answered after the last failure: %+v", m)
		assert.Equal(t, "AUTH_REQUIRED", m.CloseError.Error.Data.StringCode)
		p.expectEOF()
		require.Eventually(t, func() bool {
			return testutil.ToFloat64(f.metrics.ConnectionsClosed.WithLabelValues(f.kind, "init_failed")) == 1
		}, 5*time.Second, time.Millisecond)
	})
}

// Issue 9, item 13: when the drain deadline passes, every call still in
// flight is answered with SERVER_SHUTDOWN before the _CloseReason, and
// Shutdown returns even though the handlers ignore their context.
func TestShutdownDeadlineAnswersInFlight(t *testing.T) {
	forEachKind(t, nil, func(t *testing.T, f *fixture) {
		p := f.dial()
		p.initialize()
		ids := []string{p.request("Stubborn", `{}`), p.request("Stubborn", `{}`)}
		<-f.h.started
		<-f.h.started
		ctx, cancel := contextWithTimeout(t, 50*time.Millisecond)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- f.srv.Shutdown(ctx) }()
		answered := map[string]bool{}
		for range ids {
			m := p.recv()
			require.NotNil(t, m.ID, "an answer before the _CloseReason: %+v", m)
			require.NotNil(t, m.Error)
			assert.Equal(t, transport.StringServerShutdown, m.Error.Data.StringCode)
			answered[*m.ID] = true
		}
		for _, id := range ids {
			assert.True(t, answered[id], id)
		}
		p.expectAbort(transport.CodeApplication, transport.StringServerShutdown)
		select {
		case err := <-done:
			assert.ErrorIs(t, err, context.DeadlineExceeded)
		case <-time.After(20 * time.Second):
			t.Fatal("Shutdown waits for handlers that ignore their context")
		}
		// The late results are dropped: nothing more reaches the peer.
		f.h.release <- struct{}{}
		f.h.release <- struct{}{}
	})
}

// An answer the read loop produced leaves even while only part of the
// next frame has arrived: a _Keepalive sent ahead of a slow upload is
// answered before the upload completes.
func TestAnswerNotHeldByPartialFrame(t *testing.T) {
	forEachKind(t, func(c *Config) { c.FrameTimeout = time.Minute }, func(t *testing.T, f *fixture) {
		p := f.dial()
		next := frame(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"k-2"}`)
		p.writeRaw(frame(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"k-1"}`) + next[:20])
		m := p.recv()
		require.NotNil(t, m.ID)
		assert.Equal(t, "k-1", *m.ID)
		p.writeRaw(next[20:])
		assert.Equal(t, "k-2", *p.recv().ID)
	})
}
