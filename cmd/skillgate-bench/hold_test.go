package main

import (
	"context"
	"net"
	"sort"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/transport"
)

// Connections that fail to open are counted, and none is held.
func TestHoldConnsCountsFailures(t *testing.T) {
	h, failed := holdConns(testCtx(t), target{Addr: unusedAddr(t), Timeout: time.Second}, 3, 0, true, 2)
	defer h.close()
	assert.Equal(t, 3, failed)
	st := h.status(failed)
	assert.Equal(t, 0, st.Open)
	assert.Equal(t, 3, st.Failed)
	assert.NotEmpty(t, st.Err)
}

// Connection i of a set numbered from offset comes from source address
// 127.0.0.(1 + (offset+i) % SrcIPs).
func TestHoldConnsSpreadsFromOffset(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	srcs := make(chan string, 3)
	go func() {
		for range 3 {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
			srcs <- host
			defer c.Close()
		}
	}()
	h, failed := holdConns(testCtx(t), target{Addr: ln.Addr().String(), Timeout: 5 * time.Second, SrcIPs: 4}, 3, 1, true, 1)
	defer h.close()
	require.Zero(t, failed, "%v", h.err())
	var got []string
	for range 3 {
		got = append(got, <-srcs)
	}
	sort.Strings(got)
	assert.Equal(t, []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}, got)
}

// One source address is no spreading: the kernel chooses it, so an IPv6
// target can be reached.
func TestDialOneSourceLeavesItToTheKernel(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skip("no IPv6 loopback:", err)
	}
	defer ln.Close()
	tg := target{Addr: ln.Addr().String(), Timeout: 5 * time.Second, SrcIPs: 1}
	nc, err := tg.dial(testCtx(t), 0)
	require.NoError(t, err)
	require.NoError(t, nc.Close())
}

func decodeMsg(t *testing.T, body string) *transport.Message {
	var m transport.Message
	require.NoError(t, transport.Decode([]byte(body), &m))
	return &m
}

// Only a _CloseReason notification closes the connection; a request of
// that name does not.
func TestCloseErr(t *testing.T) {
	assert.ErrorIs(t, closeErr(decodeMsg(t, `{"jsonrpc":"2.0","method":"_CloseReason","params":{"code":"X"}}`)), errConnClosed)
	assert.NoError(t, closeErr(decodeMsg(t, `{"jsonrpc":"2.0","method":"_CloseReason","params":{},"id":"1"}`)))
	assert.NoError(t, closeErr(decodeMsg(t, `{"jsonrpc":"2.0","method":"_Keepalive","params":{}}`)))
}

// fakeInitServer reads the Initialize request on nc, then writes each of
// replies as a frame, reading the client's answer after a request, until
// the client hangs up.
func fakeInitServer(t *testing.T, nc net.Conn, replies ...string) {
	fr := transport.NewReader(nc, 1<<20)
	if _, err := fr.ReadFrame(); err != nil {
		t.Error(err)
		return
	}
	for _, r := range replies {
		frame, err := transport.AppendFrame(nil, []byte(r), transport.MaxFrameBody)
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := nc.Write(frame); err != nil {
			return
		}
		if decodeMsg(t, r).Kind == transport.KindRequest {
			if _, err := fr.ReadFrame(); err != nil {
				t.Error(err)
				return
			}
		}
	}
}

// initialize answers keepalives while it waits, and fails on an error
// answer or a _CloseReason.
func TestInitialize(t *testing.T) {
	const (
		keepalive = `{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"k1"}`
		closing   = `{"jsonrpc":"2.0","method":"_CloseReason","params":{"code":"SHUTDOWN"}}`
		failed    = `{"jsonrpc":"2.0","error":{"code":-32600,"message":"no"},"id":"init-1"}`
		ok        = `{"jsonrpc":"2.0","result":{},"id":"init-1"}`
	)
	for _, c := range []struct {
		name    string
		replies []string
		probes  int
		wantErr error
	}{
		{"answered", []string{keepalive, ok}, 1, nil},
		{"refused", []string{keepalive, failed}, 1, errInitFailed},
		{"closed", []string{closing, ok}, 0, errConnClosed},
	} {
		t.Run(c.name, func(t *testing.T) {
			client, server := net.Pipe()
			defer client.Close()
			done := make(chan struct{})
			go func() {
				defer close(done)
				defer server.Close()
				fakeInitServer(t, server, c.replies...)
			}()
			probes, err := newWireConn(client).initialize(5 * time.Second)
			_ = client.Close()
			<-done
			assert.Equal(t, c.probes, probes)
			if c.wantErr == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, c.wantErr)
			}
		})
	}
}

// waitRounds polls every 100 ms from minWait on, and not at all when there
// is no target to reach.
func TestWaitRoundsPolls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// More than 1000 polls would be a busy loop: end it.
		polls := 0
		waitRounds(t.Context(), 5, 0, 3*time.Second, func() uint64 {
			polls++
			if polls > 1000 {
				return 5
			}
			return 4
		})
		require.Equal(t, 30, polls, "at 0 s, 0.1 s, ... 2.9 s")

		polls = 0
		waitRounds(t.Context(), 5, time.Second, 3*time.Second, func() uint64 {
			polls++
			return 4
		})
		assert.Equal(t, 20, polls, "at 1.0 s, 1.1 s, ... 2.9 s")

		polls = 0
		waitRounds(t.Context(), 0, time.Second, 3*time.Second, func() uint64 {
			polls++
			return 0
		})
		assert.Zero(t, polls)
	})
}

// fakeHolder is a holder with a fixed status.
type fakeHolder struct{ st holdStatus }

func (f fakeHolder) status() (holdStatus, error) { return f.st, nil }
func (f fakeHolder) close() error                { return nil }

// The status of several holders adds up; the first error reported wins.
func TestSumStatus(t *testing.T) {
	st, err := sumStatus([]holder{
		fakeHolder{holdStatus{Open: 1, Failed: 2, Probes: 3, Dead: 4}},
		fakeHolder{holdStatus{Open: 10, Probes: 30, Err: "first"}},
		fakeHolder{holdStatus{Open: 100, Err: "second"}},
	})
	require.NoError(t, err)
	assert.Equal(t, holdStatus{Open: 111, Failed: 2, Probes: 33, Dead: 4, Err: "first"}, st)
}

// holdRounds waits for Rounds probes per connection past the ones
// answered before it (up to HoldMax) and reports only the new ones.
func TestHoldRounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := idleConfig{Rounds: 2, Hold: time.Second, HoldMax: 5 * time.Second}
		res := &idleResult{Conns: 3}
		// 1 probe before, 5 since: one short of 2 rounds of 3 connections.
		hs := []holder{fakeHolder{holdStatus{Open: 3, Probes: 6}}}
		held, err := holdRounds(t.Context(), &cfg, hs, 1, res)
		require.NoError(t, err)
		assert.Equal(t, 5*time.Second, held)
		assert.Equal(t, uint64(5), res.Probes)

		hs = []holder{fakeHolder{holdStatus{Open: 3, Probes: 7}}}
		held, err = holdRounds(t.Context(), &cfg, hs, 1, res)
		require.NoError(t, err)
		assert.Equal(t, time.Second, held)
		assert.Equal(t, uint64(6), res.Probes)
	})
}

// Connections that fit the open-file limit, less 256 for the rest, are
// held in this process; more go to worker processes.
func TestStartHoldersLocalUpToTheLimit(t *testing.T) {
	ctx, cancel := context.WithCancel(testCtx(t))
	cancel() // no connection opens, and no worker starts
	cfg := idleConfig{Target: target{Addr: unusedAddr(t), Timeout: time.Second}, Conns: 50}
	hs, err := startHolders(ctx, &cfg, 306, testLog(t))
	require.NoError(t, err, "50 connections fit 306 - 256")
	st, err := sumStatus(hs)
	require.NoError(t, err)
	assert.Equal(t, 50, st.Failed)
	closeHolders(hs)

	_, err = startHolders(ctx, &cfg, 305, testLog(t))
	assert.ErrorIs(t, err, context.Canceled, "a worker process is needed")
}
