package session

import (
	"context"
	"crypto/tls"
	"net"
	"sync/atomic"
)

var clientIDs atomic.Uint64

// ClientConfig returns the defaults for the dialing side: request ids
// "cl-<n>".
func ClientConfig() Config {
	c := DefaultConfig()
	c.IDPrefix = "cl"
	return c
}

// Dial connects to a framed JSON-RPC server (over TLS when tlsConf is not
// nil) and starts serving the connection: the server's _Keepalive requests
// are answered and the server is probed in turn. h serves requests from the
// server other than _Keepalive and may be nil.
func Dial(ctx context.Context, addr string, tlsConf *tls.Config, cfg Config, h Handler) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tlsConf != nil {
		tc := tls.Client(nc, tlsConf)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = nc.Close()
			return nil, err
		}
		nc = tc
	}
	return NewClientConn(nc, cfg, h)
}

// NewClientConn serves an established connection as the client side.
func NewClientConn(nc net.Conn, cfg Config, h Handler) (*Conn, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		_ = nc.Close()
		return nil, err
	}
	c := newConn(nc, &cfg, h, "client", clientIDs.Add(1), context.Background())
	go c.serve()
	return c, nil
}
