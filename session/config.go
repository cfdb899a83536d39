package session

import (
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/transport"
)

// Config configures connections. Zero fields take the defaults of
// DefaultConfig when passed through WithDefaults.
type Config struct {
	// MaxMessageSize bounds every frame body in both directions (bytes).
	MaxMessageSize int
	// KeepaliveInterval is how often an idle connection is probed with a
	// _Keepalive. A probe is skipped when the peer was heard from since the
	// last one.
	KeepaliveInterval time.Duration
	// KeepaliveTimeout is how long a _Keepalive may go unanswered before
	// the connection is aborted with KEEPALIVE.
	KeepaliveTimeout time.Duration
	// FrameTimeout bounds the arrival of a frame that has begun.
	FrameTimeout time.Duration
	// InitTimeout closes a connection that has not initialized in time
	// (server side only; 0 disables).
	InitTimeout time.Duration
	// MaxInitFailures closes a connection after this many failed
	// initialization attempts (server side only).
	MaxInitFailures int
	// WriteTimeout bounds each socket write.
	WriteTimeout time.Duration
	// MaxInflight bounds concurrently served requests per connection; past
	// it requests are answered with OVERLOADED.
	MaxInflight int
	// MaxQueuedBytes bounds the frames waiting to be written to one
	// connection, whatever they are (answers, keepalive answers, errors,
	// notifications); a peer that stops reading past it is disconnected.
	// Zero derives it: DefaultQueuedMessages × MaxMessageSize.
	MaxQueuedBytes int
	// RecentIDs is how many completed request ids are remembered to detect
	// a reused id.
	RecentIDs int
	// IDPrefix starts the ids of requests this side sends ("gw" -> "gw-1").
	IDPrefix string
	// InitMethod is the method that initializes a connection; until it
	// succeeds, other application methods answer -32601. Empty disables
	// gating (the client side, and the default: the application names its
	// method, as framedfront.Configure does).
	InitMethod string
	// OnNotification receives the application notifications the peer
	// sends (a client's run_event stream). It runs on the read loop, so it
	// must not block; params are the caller's to keep. nil ignores them.
	OnNotification func(c *Conn, method string, params []byte)
	// TooLargeHint ends the details of a RESPONSE_TOO_LARGE answer: the
	// application says there how to ask for less.
	TooLargeHint string

	// MaxConnections bounds a server's open connections; past it a new
	// connection is told OVERLOADED and closed. 0 means no limit.
	MaxConnections int
	// HandshakeTimeout bounds a TLS handshake on the server side.
	HandshakeTimeout time.Duration
	// DrainTimeout is how long Shutdown's caller lets in-flight requests
	// finish. The deadline itself is Shutdown's context; this copy is only
	// reported to peers in the SERVER_SHUTDOWN _CloseReason (0: not told).
	DrainTimeout time.Duration

	// Budget bounds the bytes queued for delivery across every connection
	// sharing it (nil: no gateway-wide bound). While it is full, new
	// requests are refused with OVERLOADED and a retry hint, and results
	// that do not fit are replaced by that error.
	Budget *Budget

	Logger  zerolog.Logger
	Metrics *metrics.Metrics
}

// Default values. Keepalive timings follow the payment-terminal SDKs: a
// probe every 30 s keeps mobile NAT bindings alive without waking radios
// often, and 20 s (the iOS SDK's value) tolerates a mobile network's latency
// spikes where the Android SDK's 5 s would abort healthy connections.
const (
	DefaultMaxMessageSize    = 1 << 20
	DefaultKeepaliveInterval = 30 * time.Second
	DefaultKeepaliveTimeout  = 20 * time.Second
	DefaultFrameTimeout      = 30 * time.Second
	DefaultInitTimeout       = 30 * time.Second
	DefaultMaxInitFailures   = 3
	DefaultWriteTimeout      = 30 * time.Second
	DefaultMaxInflight       = 64
	DefaultRecentIDs         = 256
	DefaultHandshakeTimeout  = 10 * time.Second
	// DefaultQueuedMessages is how many maximum-size messages one
	// connection may have queued when MaxQueuedBytes is not set.
	DefaultQueuedMessages = 8
)

// DefaultConfig returns the server-side defaults.
func DefaultConfig() Config {
	return Config{
		MaxMessageSize:    DefaultMaxMessageSize,
		KeepaliveInterval: DefaultKeepaliveInterval,
		KeepaliveTimeout:  DefaultKeepaliveTimeout,
		FrameTimeout:      DefaultFrameTimeout,
		InitTimeout:       DefaultInitTimeout,
		MaxInitFailures:   DefaultMaxInitFailures,
		WriteTimeout:      DefaultWriteTimeout,
		MaxInflight:       DefaultMaxInflight,
		RecentIDs:         DefaultRecentIDs,
		HandshakeTimeout:  DefaultHandshakeTimeout,
		IDPrefix:          "gw",
		Logger:            zerolog.Nop(),
	}
}

// WithDefaults returns c with zero fields set from DefaultConfig (InitMethod
// and IDPrefix excepted: empty values are meaningful).
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	setDefault(&c.MaxMessageSize, d.MaxMessageSize)
	setDefault(&c.KeepaliveInterval, d.KeepaliveInterval)
	setDefault(&c.KeepaliveTimeout, d.KeepaliveTimeout)
	setDefault(&c.FrameTimeout, d.FrameTimeout)
	setDefault(&c.MaxInitFailures, d.MaxInitFailures)
	setDefault(&c.WriteTimeout, d.WriteTimeout)
	setDefault(&c.MaxInflight, d.MaxInflight)
	setDefault(&c.MaxQueuedBytes, DefaultQueuedMessages*c.MaxMessageSize)
	setDefault(&c.RecentIDs, d.RecentIDs)
	setDefault(&c.HandshakeTimeout, d.HandshakeTimeout)
	if c.Metrics == nil {
		c.Metrics = metrics.New("unknown")
	}
	return c
}

func setDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// Validate reports every invalid field.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.MaxMessageSize >= transport.MinMessageSize && c.MaxMessageSize <= transport.MaxFrameBody,
		"max message size %d is outside [%d, %d]", c.MaxMessageSize, transport.MinMessageSize, transport.MaxFrameBody)
	check(c.KeepaliveInterval > 0, "keepalive interval must be positive")
	check(c.KeepaliveTimeout > 0, "keepalive timeout must be positive")
	check(c.FrameTimeout > 0, "frame timeout must be positive")
	check(c.InitTimeout >= 0, "init timeout must not be negative")
	check(c.WriteTimeout > 0, "write timeout must be positive")
	check(c.MaxInflight > 0, "max inflight must be positive")
	check(c.MaxQueuedBytes >= c.MaxMessageSize, "max queued bytes %d must hold at least one message (%d)", c.MaxQueuedBytes, c.MaxMessageSize)
	check(c.RecentIDs >= 0, "recent ids must not be negative")
	check(c.MaxConnections >= 0, "max connections must not be negative")
	check(c.DrainTimeout >= 0, "drain timeout must not be negative")
	check(c.Metrics != nil, "metrics are required")
	return errors.Join(errs...)
}
