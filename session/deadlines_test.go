package session

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/skillgate/skillgate/internal/testlog"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/transport"
)

// The documented id bound is 1024 bytes: an id of exactly that length is
// served and echoed whole, one byte more aborts the connection.
func TestIDLengthBoundary(t *testing.T) {
	require.Equal(t, 1024, MaxIDLen, "the documented limit")
	f := newFixture(t, "pipe", nil)
	p := f.dial()
	id := strings.Repeat("i", 1024)
	p.send(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"` + id + `"}`)
	m := p.recv()
	require.NotNil(t, m.ID)
	assert.Equal(t, id, *m.ID)
	assert.Nil(t, m.Error)

	p.send(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"` + id + `j"}`)
	m = p.expectAbort(transport.CodeInvalidRequest, transport.StringInvalidRequest)
	assert.Contains(t, m.CloseError.Error.Data.Details, "1024 bytes")
}

// A slot of MaxInflight is given back when its request is answered: after
// the bound was reached and the calls finished, as many run again.
func TestMaxInflightSlotsReturn(t *testing.T) {
	f := newFixture(t, "pipe", func(c *Config) { c.MaxInflight = 2 })
	p := f.dial()
	p.initialize()
	for round := range 3 {
		a, b := p.request("Block", `{}`), p.request("Block", `{}`)
		<-f.h.started
		<-f.h.started
		m := p.call("Echo", `{}`)
		require.NotNil(t, m.Error, "round %d: a third call past the bound", round)
		assert.Equal(t, transport.StringOverloaded, m.Error.Data.StringCode)
		f.h.release <- struct{}{}
		f.h.release <- struct{}{}
		got := map[string]bool{*p.recv().ID: true, *p.recv().ID: true}
		require.Equal(t, map[string]bool{a: true, b: true}, got)
	}
	assert.Nil(t, p.call("Echo", `{}`).Error)
}

// Notifications are counted by method, unknown ones under "other"; none is
// answered.
func TestNotificationsCounted(t *testing.T) {
	f := newFixture(t, "pipe", nil)
	p := f.dial()
	p.send(`{"jsonrpc":"2.0","method":"_Info","params":{"message":"hello"}}`)
	p.send(`{"jsonrpc":"2.0","method":"_Info","params":{"big":"` + strings.Repeat("x", 3000) + `"}}`)
	p.send(`{"jsonrpc":"2.0","method":"_Error","params":{"id":"gw-1","error":{"code":1,"message":"bad result"}}}`)
	p.send(`{"jsonrpc":"2.0","method":"_Error","params":{"error":"not an error object"}}`)
	p.send(`{"jsonrpc":"2.0","method":"_CloseReason","params":{"error":{"code":-32700,"message":"Parse error."}}}`)
	p.send(`{"jsonrpc":"2.0","method":"SomethingHappened","params":{}}`)
	p.send(`{"jsonrpc":"2.0","method":"AnotherThing","params":{}}`)
	m := p.call("_Keepalive", `{}`)
	require.Nil(t, m.Error)
	n := f.metrics.Notifications
	assert.Equal(t, 2.0, testutil.ToFloat64(n.WithLabelValues(transport.MethodInfo)))
	assert.Equal(t, 2.0, testutil.ToFloat64(n.WithLabelValues(transport.MethodError)))
	assert.Equal(t, 1.0, testutil.ToFloat64(n.WithLabelValues(transport.MethodCloseReason)))
	assert.Equal(t, 2.0, testutil.ToFloat64(n.WithLabelValues("other")))
	assert.Zero(t, testutil.ToFloat64(n.WithLabelValues("SomethingHappened")), "labels stay bounded")
}

// Research item 2: every write has a deadline, even while the queue stays
// far under its byte bound. A peer that stops reading is cut off as a
// slow reader once its write times out, and nothing else closes it.
func TestWriteDeadlineCutsIdleReader(t *testing.T) {
	f := newFixture(t, "pipe", func(c *Config) { c.WriteTimeout = 200 * time.Millisecond })
	p := f.dial()
	p.initialize()
	c := f.onlyConn()
	// net.Pipe holds nothing: the answer's write blocks until read.
	p.request("Big", `{"n":1000}`)
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second): // safety net only
		t.Fatal("a peer that stopped reading was never cut off")
	}
	assert.Equal(t, ReasonSlowReader, c.Reason(), "closed for another reason: %v", c.Err())
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(f.metrics.ConnectionsClosed.WithLabelValues("pipe", "slow_reader")) == 1
	}, 5*time.Second, time.Millisecond)
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

// The frame and byte counters count exactly what crossed the wire, each
// way. Requests go one at a time: small answers queued together share a
// buffer and are counted as one frame sent.
func TestWireCounters(t *testing.T) {
	f := newFixture(t, "pipe", nil)
	p := f.dial()
	p.writeRaw(frame(`{"jsonrpc":"2.0","method":"_Info","params":{}}`) +
		frame(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"c-1"}`))
	sent, got := 2*transport.FrameOverhead+len(`{"jsonrpc":"2.0","method":"_Info","params":{}}`+
		`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"c-1"}`), 0
	for _, id := range []string{"c-1", "c-22"} {
		if id != "c-1" {
			body := `{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"` + id + `"}`
			p.send(body)
			sent += len(body) + transport.FrameOverhead
		}
		m := p.recv()
		require.Equal(t, id, *m.ID)
		got += len(transport.AppendResult(nil, []byte(`"`+id+`"`), transport.EmptyObject)) + transport.FrameOverhead
	}
	mt := f.metrics
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(mt.FramesReceived) == 3 && testutil.ToFloat64(mt.FramesSent) == 2
	}, 5*time.Second, time.Millisecond)
	assert.Equal(t, float64(sent), testutil.ToFloat64(mt.BytesReceived))
	require.Eventually(t, func() bool { return testutil.ToFloat64(mt.BytesSent) == float64(got) }, 5*time.Second, time.Millisecond)
}

// A peer's notification params are logged whole up to 2048 bytes and as a
// 2048-byte prefix with their size past that; a peer's _Error is logged
// with its string code.
func TestNotificationLogging(t *testing.T) {
	logs := &testlog.Buffer{}
	f := newFixture(t, "pipe", func(c *Config) { c.Logger = zerolog.New(logs).Level(zerolog.InfoLevel) })
	p := f.dial()
	params := func(n int) string { // a JSON object of exactly n bytes
		return `{"m":"` + strings.Repeat("x", n-8) + `"}`
	}
	require.Len(t, params(maxLoggedParams), 2048)
	p.send(`{"jsonrpc":"2.0","method":"_Info","params":` + params(2048) + `}`)
	p.send(`{"jsonrpc":"2.0","method":"_Info","params":` + params(2049) + `}`)
	p.send(`{"jsonrpc":"2.0","method":"_Error","params":{"error":{"code":1,"message":"bad result","data":{"string_code":"QUOTA"}}}}`)
	require.Nil(t, p.call("_Keepalive", `{}`).Error)
	infos, errs := peerNotificationLogs(t, logs)
	require.Len(t, infos, 2)
	assert.Equal(t, map[string]any{"m": strings.Repeat("x", 2040)}, infos[0]["params"])
	assert.NotContains(t, infos[0], "params_prefix")
	assert.NotContains(t, infos[1], "params")
	assert.Equal(t, params(2049)[:2048], infos[1]["params_prefix"])
	assert.Equal(t, 2049.0, infos[1]["params_bytes"])
	require.Len(t, errs, 1)
	assert.Equal(t, "QUOTA", errs[0]["string_code"])
	assert.Equal(t, "bad result", errs[0]["peer_message"], "not hidden by the log line's own message")
}

// A frame left unfinished past the frame timeout closes the connection
// under its own reason, not as a parse error, though the code on the
// wire is the parse error's.
func TestFrameTimeoutReason(t *testing.T) {
	f := newFixture(t, "pipe", func(c *Config) { c.FrameTimeout = 100 * time.Millisecond })
	p := f.dial()
	p.writeRaw(`0000003f:{"jsonrpc":"2.0"`)
	p.expectAbort(transport.CodeParseError, transport.StringParseError)
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(f.metrics.ConnectionsClosed.WithLabelValues("pipe", "frame_timeout")) == 1
	}, 5*time.Second, time.Millisecond)
}

// bubbleConn returns the one connection of a server inside a synctest
// bubble, once it is registered.
func bubbleConn(t *testing.T, srv *Server) *Conn {
	t.Helper()
	synctest.Wait()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	require.Len(t, srv.conns, 1)
	for c := range srv.conns {
		return c
	}
	return nil
}

// The write deadline is renewed only when less than half of the write
// timeout is left. An answer written W/2 after the first (or sooner)
// still runs under the first deadline, so a peer that stops reading then
// is cut off W after the first write; one written a nanosecond later gets
// a fresh deadline of its own. Virtual time (synctest) makes the instants
// exact.
func TestWriteDeadlineRenewedAtHalf(t *testing.T) {
	const w = 10 * time.Second
	for _, tc := range []struct {
		name  string
		after time.Duration
		cut   time.Duration
	}{
		{"one below half", w/2 - 1, w},
		{"at half", w / 2, w},
		{"one above half", w/2 + 1, w/2 + 1 + w},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv, p := pipeServer(t, func(c *Config) { c.InitTimeout, c.WriteTimeout = 0, w })
				c := bubbleConn(t, srv)
				start := time.Now()
				p.send(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"k-1"}`)
				require.Equal(t, "k-1", *p.recv().ID)
				time.Sleep(tc.after)
				p.send(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"k-2"}`)
				<-c.Done() // the peer reads no more
				assert.Equal(t, tc.cut, time.Since(start))
				assert.Equal(t, ReasonSlowReader, c.Reason())
				_ = srv.Close()
			})
		})
	}
}

// An aborting connection's _CloseReason gets at most finalWriteTimeout
// (2 s), however long the write timeout: a peer that sends garbage and
// reads nothing is gone 2 s later.
func TestFinalFrameDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, p := pipeServer(t, func(c *Config) { c.InitTimeout, c.WriteTimeout = 0, time.Minute })
		c := bubbleConn(t, srv)
		start := time.Now()
		p.writeRaw("0000000g:{}\n")
		<-c.Done()
		assert.Equal(t, 2*time.Second, time.Since(start))
		assert.Equal(t, ReasonParseError, c.Reason())
		_ = srv.Close()
	})
}

// The documented default closes a connection at its third failed
// Initialize, not before: two failures leave it open and a success then
// still initializes it.
func TestInitFailuresDefaultBoundary(t *testing.T) {
	require.Equal(t, 3, DefaultMaxInitFailures, "the documented default")
	f := newFixture(t, "pipe", nil)
	p := f.dial()
	for range 2 {
		m := p.call("Initialize", `{"token":"bad"}`)
		require.NotNil(t, m.Error)
		assert.Equal(t, "AUTH_REQUIRED", m.Error.Data.StringCode)
	}
	p.initialize()
	assert.Nil(t, p.call("Echo", `{}`).Error)

	q := f.dial()
	for range 2 {
		require.NotNil(t, q.call("Initialize", `{"token":"bad"}`).Error)
	}
	q.request("Initialize", `{"token":"bad"}`)
	require.NotNil(t, q.recv().Error)
	q.expectAbort(transport.CodeApplication, "AUTH_REQUIRED")
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(f.metrics.ConnectionsClosed.WithLabelValues("pipe", "init_failed")) == 1
	}, 5*time.Second, time.Millisecond)
}

// A refused request's id counts as used: the peer may not reuse it, as
// with any other request.
func TestRefusedIDIsUsed(t *testing.T) {
	f := newFixture(t, "pipe", nil)
	p := f.dial()
	p.send(`{"jsonrpc":"2.0","method":"Echo","params":{},"id":"early"}`)
	m := p.recv()
	require.NotNil(t, m.Error, "refused before Initialize")
	assert.Equal(t, transport.StringMethodNotFound, m.Error.Data.StringCode)
	p.send(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"early"}`)
	m = p.expectAbort(transport.CodeInvalidRequest, transport.StringInvalidRequest)
	assert.Contains(t, m.CloseError.Error.Data.Details, "already used")
}

// Frames are counted as received only when a whole frame was read: the
// end of the connection adds none.
func TestFramesReceivedUntilClose(t *testing.T) {
	f := newFixture(t, "pipe", nil)
	p := f.dial()
	c := f.onlyConn()
	require.Nil(t, p.call("_Keepalive", `{}`).Error)
	require.NoError(t, p.nc.Close())
	<-c.Done()
	assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.FramesReceived))
}

// The defaults docs/operations.md documents, stated as numbers rather than
// through the constants; the queue bound follows the message size (8 ×).
func TestDocumentedDefaults(t *testing.T) {
	d := DefaultConfig()
	assert.Equal(t, 30*time.Second, d.KeepaliveInterval)
	assert.Equal(t, 20*time.Second, d.KeepaliveTimeout)
	assert.Equal(t, 30*time.Second, d.FrameTimeout)
	assert.Equal(t, 30*time.Second, d.InitTimeout)
	assert.Equal(t, 30*time.Second, d.WriteTimeout)
	assert.Equal(t, 64, d.MaxInflight)
	assert.Equal(t, 3, d.MaxInitFailures)
	assert.Equal(t, 1<<20, d.MaxMessageSize)
	w := Config{MaxMessageSize: 64 << 10}.WithDefaults()
	assert.Equal(t, 8*64<<10, w.MaxQueuedBytes)
	assert.Equal(t, 30*time.Second, w.WriteTimeout)
	assert.Equal(t, 8<<20, Config{}.WithDefaults().MaxQueuedBytes)
}

// logRecords decodes the log lines written to logs so far.
func logRecords(t *testing.T, logs *testlog.Buffer) []map[string]any {
	recs, err := logs.Records()
	require.NoError(t, err)
	return recs
}

// peerNotificationLogs splits the lines logged so far for a peer's _Info
// and _Error notifications.
func peerNotificationLogs(t *testing.T, logs *testlog.Buffer) (info, errs []map[string]any) {
	for _, l := range logRecords(t, logs) {
		switch l["method"] {
		case transport.MethodInfo:
			info = append(info, l)
		case transport.MethodError:
			errs = append(errs, l)
		}
	}
	return info, errs
}
