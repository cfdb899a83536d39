package session

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

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
