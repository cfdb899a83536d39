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
	// run, default 30s.
	RequestTimeout time.Duration
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
		Logger:         zerolog.Nop(),
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
	}
	return nil
}
