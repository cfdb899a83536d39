package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/skillgate/skillgate/transport"
)

// maxResponse bounds response frames the tool accepts.
const maxResponse = 64 << 20

// target is where and how connections are made.
type target struct {
	Addr    string
	TLS     *tls.Config // nil: plain TCP
	Timeout time.Duration
	// SrcIPs spreads connections over loopback source addresses
	// 127.0.0.1..127.0.0.SrcIPs, each with its own ephemeral port range
	// (0 or 1: let the kernel choose).
	SrcIPs int
}

// dial opens connection number i, completing the TLS handshake.
func (t *target) dial(ctx context.Context, i int) (net.Conn, error) {
	d := net.Dialer{Timeout: t.Timeout}
	if t.SrcIPs > 1 {
		d.LocalAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(1+i%t.SrcIPs))}
	}
	nc, err := d.DialContext(ctx, "tcp", t.Addr)
	if err != nil {
		return nil, err
	}
	if t.TLS == nil {
		return nc, nil
	}
	tc := tls.Client(nc, t.TLS)
	hctx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		_ = nc.Close()
		return nil, err
	}
	return tc, nil
}

// initParams is the Initialize request of every connection.
var initParams = []byte(`{"protocol_version":"1.0","client":{"name":"skillgate-bench","version":"1"}}`)

// wireConn is a client connection: a frame reader owned by one goroutine
// and a socket whose writes are serialized by wmu, so that the reader can
// answer the server's keepalives while a writer pipelines requests.
type wireConn struct {
	nc  net.Conn
	fr  transport.Reader
	wmu sync.Mutex
	msg transport.Message
	out []byte // keepalive answers, guarded by wmu
}

func newWireConn(nc net.Conn) *wireConn {
	c := &wireConn{nc: nc}
	c.fr.Reset(nc, maxResponse)
	return c
}

func (c *wireConn) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.nc.Write(b)
	return err
}

// next reads and decodes the next message. Requests from the server are
// answered here: _Keepalive with {}, anything else with -32601; the
// returned bool reports a _Keepalive answered.
func (c *wireConn) next() (*transport.Message, bool, error) {
	body, err := c.fr.ReadFrame()
	if err != nil {
		return nil, false, err
	}
	m := &c.msg
	if err := transport.Decode(body, m); err != nil {
		return nil, false, fmt.Errorf("%w: %v", errBadResponse, err)
	}
	if m.Kind != transport.KindRequest {
		return m, false, nil
	}
	ka := m.IsMethod(transport.MethodKeepalive)
	return m, ka, c.answer(m, ka)
}

func (c *wireConn) answer(m *transport.Message, keepalive bool) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.out = transport.BeginFrame(c.out[:0])
	if keepalive {
		c.out = transport.AppendResult(c.out, m.RawID, transport.EmptyObject)
	} else {
		c.out = transport.AppendErrorResponse(c.out, m.RawID,
			transport.NewError(transport.CodeMethodNotFound, "Method not found."))
	}
	c.out, _ = transport.EndFrame(c.out, 0, transport.MaxFrameBody)
	_, err := c.nc.Write(c.out)
	return err
}

// closeErr turns a _CloseReason notification into an error.
func closeErr(m *transport.Message) error {
	if m.Kind == transport.KindNotification && m.IsMethod(transport.MethodCloseReason) {
		return fmt.Errorf("%w: %s", errConnClosed, m.Params)
	}
	return nil
}

// initialize sends Initialize and waits for its answer, answering the
// server's keepalives meanwhile. Returns the keepalives answered.
func (c *wireConn) initialize(timeout time.Duration) (int, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(timeout))
	defer c.nc.SetReadDeadline(time.Time{})
	frame, _ := transport.AppendFrame(nil, transport.AppendRequest(nil, "init-1", "Initialize", initParams), transport.MaxFrameBody)
	if err := c.write(frame); err != nil {
		return 0, err
	}
	probes := 0
	for {
		m, ka, err := c.next()
		if err != nil {
			return probes, fmt.Errorf("%w: %v", errInitFailed, err)
		}
		if ka {
			probes++
		}
		if err := closeErr(m); err != nil {
			return probes, err
		}
		if string(m.ID) != "init-1" || m.Kind == transport.KindRequest {
			continue
		}
		if m.Kind == transport.KindError {
			return probes, fmt.Errorf("%w: %v", errInitFailed, m.Error)
		}
		return probes, nil
	}
}
