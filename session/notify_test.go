package session

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/internal/testlog"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/transport"
)

// notifyHandler sends notifications from inside a request, as the run
// methods do: "Stream" sends N of them with Notify, "Flood" calls
// TryNotify until it is refused and reports how many were queued.
func notifyHandler(ctx context.Context, req *Request) (any, error) {
	var p struct {
		N    int
		Size int
	}
	_ = json.Unmarshal(req.Params, &p)
	pad := strings.Repeat("x", p.Size)
	switch req.Method {
	case "Initialize":
		return map[string]any{}, nil
	case "Stream":
		for i := range p.N {
			if err := req.Conn.Notify(ctx, "tick", map[string]any{"seq": i + 1, "pad": pad}); err != nil {
				return nil, transport.AppError("NOTIFY_FAILED", err.Error())
			}
		}
		return map[string]int{"sent": p.N}, nil
	case "Flood":
		for i := range 10_000 {
			err := req.Conn.TryNotify("tick", map[string]any{"seq": i + 1, "pad": pad})
			if errors.Is(err, ErrBackpressure) {
				return map[string]int{"sent": i}, nil
			}
			if err != nil {
				return nil, transport.AppError("NOTIFY_FAILED", err.Error())
			}
		}
		return nil, transport.AppError("NEVER_REFUSED", "TryNotify never applied backpressure")
	}
	return nil, transport.NewError(transport.CodeMethodNotFound, "Method not found.")
}

// notifyPeer serves notifyHandler on one side of a pipe or a loopback TCP
// connection and returns a raw peer on the other side.
func notifyPeer(t *testing.T, kind string, queued int) *peer {
	t.Helper()
	cfg := testConfig()
	cfg.Metrics = metrics.New("test")
	cfg.MaxQueuedBytes = queued
	srv, err := NewServer(cfg, HandlerFunc(notifyHandler))
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	var nc net.Conn
	if kind == "pipe" {
		a, b := net.Pipe()
		srv.ServeConn(b, "pipe")
		nc = a
	} else {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		go func() { _ = srv.Serve(ln, "tcp") }()
		nc, err = net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return &peer{t: t, nc: nc, fr: transport.NewReader(nc, 1<<20)}
}

// readTicks reads notifications until the response to id and returns
// their seq values in arrival order.
func readTicks(p *peer, id string) ([]int, *wireMsg) {
	p.t.Helper()
	var seqs []int
	for range 100_000 {
		m := p.recv()
		if m.ID != nil {
			require.Equal(p.t, id, *m.ID)
			return seqs, m
		}
		require.Equal(p.t, "tick", m.Method, "unexpected frame %+v", m)
		var t struct{ Seq int }
		require.NoError(p.t, json.Unmarshal(m.Params, &t))
		seqs = append(seqs, t.Seq)
	}
	p.t.Fatal("no response")
	return nil, nil
}

// Every notification a handler sends arrives, in order, before its
// response; a peer that lets far more than MaxQueuedBytes of notifications
// pile up is waited for, not cut off as a slow reader.
func TestNotifyOrderAndNoCutOff(t *testing.T) {
	for _, kind := range []string{"pipe", "tcp"} {
		t.Run(kind, func(t *testing.T) {
			p := notifyPeer(t, kind, 64<<10)
			p.call("Initialize", `{}`)
			// 400 notifications of 1 KiB: six times the queue bound.
			id := p.request("Stream", `{"N":400,"Size":1024}`)
			seqs, resp := readTicks(p, id)
			require.Nil(t, resp.Error)
			require.Len(t, seqs, 400)
			for i, s := range seqs {
				require.Equal(t, i+1, s)
			}
		})
	}
}

// TryNotify refuses with ErrBackpressure once the notifications' share of
// the queue is full, instead of queuing more or aborting the connection;
// the response still goes out after what was queued.
func TestTryNotifyBackpressure(t *testing.T) {
	p := notifyPeer(t, "pipe", 64<<10)
	p.call("Initialize", `{}`)
	id := p.request("Flood", `{"Size":1024}`)
	seqs, resp := readTicks(p, id)
	require.Nil(t, resp.Error, "%s", resp.Result)
	var r struct{ Sent int }
	require.NoError(t, json.Unmarshal(resp.Result, &r))
	require.Equal(t, r.Sent, len(seqs))
	// At most the share waits in the queue, plus the one batch the writer
	// has taken and is blocked writing.
	require.LessOrEqual(t, r.Sent, (64<<10/2+maxBatchBytes)/1024+1, "notifications past the share were queued")
	require.Positive(t, r.Sent)
	// The connection lives on.
	seqs, resp = readTicks(p, p.request("Stream", `{"N":1}`))
	require.Nil(t, resp.Error)
	require.Equal(t, []int{1}, seqs)
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
