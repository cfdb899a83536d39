package main

import (
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/transport"
)

// Only the end of a connection the tool is closing itself is not a
// failure: a gateway's close reason or a reset that arrives while the tool
// closes its connections is still reported.
func TestFailuresWhileClosing(t *testing.T) {
	for _, c := range []struct {
		name    string
		closing bool
		err     error
		kept    bool
	}{
		{"closed before the tool closes", false, fmt.Errorf("read: %w", net.ErrClosed), true},
		{"the tool's own close", true, fmt.Errorf("read: %w", net.ErrClosed), false},
		{"a close reason while closing", true, errConnClosed, true},
		{"a reset while closing", true, syscall.ECONNRESET, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs := &runState{}
			rs.closing.Store(c.closing)
			assert.Equal(t, !c.kept, closedOnPurpose(&rs.closing, c.err))

			client, server := net.Pipe()
			defer server.Close()
			lc := newLoadConn(newWireConn(client), nil, rs, 1, -1)
			lc.failRead(c.err)
			lc.failRead(errBadResponse) // only the first failure counts
			if c.kept {
				assert.ErrorIs(t, lc.err, c.err)
			} else {
				assert.NoError(t, lc.err)
			}
			select {
			case <-lc.dead:
			default:
				t.Error("a failure closes the connection")
			}
		})
	}
}

// A held connection the gateway closes with a reason while the holder is
// closing is counted dead; one the holder closes itself is not.
func TestHoldCloseReasonWhileClosing(t *testing.T) {
	const reason = `{"jsonrpc":"2.0","method":"_CloseReason","params":{"code":"SHUTDOWN"}}`
	for _, c := range []struct {
		name string
		sent bool
		dead int64
	}{
		{"the gateway's close reason", true, 1},
		{"the holder's own close", false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			client, server := tcpPair(t)
			h := &holdSet{conns: []*wireConn{newWireConn(client)}}
			h.closing.Store(true)
			if c.sent {
				go func() {
					frame, err := transport.AppendFrame(nil, []byte(reason), transport.MaxFrameBody)
					if err == nil {
						_, _ = server.Write(frame)
					}
				}()
			} else {
				_ = client.Close()
			}
			h.serve(h.conns[0])
			assert.Equal(t, c.dead, h.dead.Load())
			if c.sent {
				require.Error(t, h.err())
				assert.ErrorIs(t, h.err(), errConnClosed)
			} else {
				assert.NoError(t, h.err())
			}
		})
	}
}

// tcpPair is both ends of one loopback TCP connection, closed at the
// test's end: a real socket, whose reads after its own Close fail with
// net.ErrClosed as the gateway's connections do.
func tcpPair(t *testing.T) (client, server net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		nc, _ := ln.Accept()
		accepted <- nc
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	server = <-accepted
	require.NotNil(t, server)
	t.Cleanup(func() {
		_ = client.Close()
		_ = server.Close()
	})
	return client, server
}
