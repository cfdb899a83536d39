package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/metrics"
)

// Resolver resolves names; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DialFunc connects to a resolved address; the proxy never hands it a name.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Config configures a Proxy. Zero fields mean their default.
type Config struct {
	// Resolver defaults to net.DefaultResolver.
	Resolver Resolver
	// Dial defaults to a net.Dialer's DialContext.
	Dial DialFunc
	// MaxConns bounds a run's concurrent connections, default 16.
	MaxConns int
	// MaxBytes bounds a run's bytes in each direction, default 64 MiB;
	// past it the connection is closed.
	MaxBytes int64
	// ConnectTimeout bounds resolving and connecting, default 10s.
	ConnectTimeout time.Duration
	// RequestTimeout bounds reading the request line and headers from the
	// run, waiting for a header reader included, default 30s.
	RequestTimeout time.Duration
	// MaxHeaderBytes bounds a request's line and headers, default 64 KiB;
	// past it the answer is a 431. What is read counts towards MaxBytes.
	// (net/http bounds a chunked body's trailer to its buffer.)
	MaxHeaderBytes int64
	// MaxHeaderReaders bounds a run's connections whose request is being
	// read at once, default 4; the others wait for one to finish.
	MaxHeaderReaders int
	// HostAddrs lists the addresses of the gateway's host, which runs
	// may not reach unless a private rule names them; it is asked for
	// every connection, so that addresses added later are known.
	// Defaults to the addresses of the host's interfaces.
	HostAddrs func() ([]netip.Addr, error)
	// Logger receives one event per connection.
	Logger zerolog.Logger
	// Metrics may be nil.
	Metrics *metrics.Metrics
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Resolver:       net.DefaultResolver,
		Dial:           (&net.Dialer{}).DialContext,
		MaxConns:       16,
		MaxBytes:       64 << 20,
		ConnectTimeout: 10 * time.Second,
		RequestTimeout: 30 * time.Second,
		MaxHeaderBytes: 64 << 10,
		// Four requests read at once keep a run's parsing memory to a
		// few hundred KiB while a client that opens its connections
		// together waits only for the headers ahead of it.
		MaxHeaderReaders: 4,
		HostAddrs:        interfaceAddrs,
		Logger:           zerolog.Nop(),
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Resolver == nil {
		c.Resolver = d.Resolver
	}
	if c.Dial == nil {
		c.Dial = d.Dial
	}
	if c.MaxConns == 0 {
		c.MaxConns = d.MaxConns
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = d.MaxBytes
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = d.ConnectTimeout
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = d.RequestTimeout
	}
	if c.MaxHeaderBytes == 0 {
		c.MaxHeaderBytes = d.MaxHeaderBytes
	}
	if c.MaxHeaderReaders == 0 {
		c.MaxHeaderReaders = d.MaxHeaderReaders
	}
	if c.HostAddrs == nil {
		c.HostAddrs = d.HostAddrs
	}
	return c
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.MaxConns < 0:
		return fmt.Errorf("%w: MaxConns is negative", errInvalidConfig)
	case c.MaxBytes < 0:
		return fmt.Errorf("%w: MaxBytes is negative", errInvalidConfig)
	case c.ConnectTimeout < 0 || c.RequestTimeout < 0:
		return fmt.Errorf("%w: a timeout is negative", errInvalidConfig)
	case c.MaxHeaderBytes < 0:
		return fmt.Errorf("%w: MaxHeaderBytes is negative", errInvalidConfig)
	case c.MaxHeaderReaders < 0:
		return fmt.Errorf("%w: MaxHeaderReaders is negative", errInvalidConfig)
	}
	return nil
}

// interfaceAddrs lists the addresses of the host's interfaces.
func interfaceAddrs() ([]netip.Addr, error) {
	list, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(list))
	for _, a := range list {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out, nil
}
