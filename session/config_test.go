package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every bound Validate enforces, at its edge and one step past it. The
// accepted edges matter as much as the refused ones: a zero init timeout
// turns the deadline off, zero recent ids remembers none, zero connections
// means no limit, and a queue of exactly one message is allowed.
func TestConfigValidateBounds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		errs   string // "" when valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"message size at 16 KiB", func(c *Config) { c.MaxMessageSize, c.MaxQueuedBytes = 16<<10, 16<<10 }, ""},
		{"message size below 16 KiB", func(c *Config) { c.MaxMessageSize = 16<<10 - 1 }, "max message size 16383 is outside [16384, 4294967295]"},
		{"message size at the frame limit", func(c *Config) { c.MaxMessageSize, c.MaxQueuedBytes = 1<<32-1, 1<<32-1 }, ""},
		{"message size past the frame limit", func(c *Config) { c.MaxMessageSize, c.MaxQueuedBytes = 1<<32, 1<<32 }, "max message size 4294967296 is outside [16384, 4294967295]"},
		{"keepalive interval zero", func(c *Config) { c.KeepaliveInterval = 0 }, "keepalive interval must be positive"},
		{"keepalive interval 1ns", func(c *Config) { c.KeepaliveInterval = time.Nanosecond }, ""},
		{"keepalive timeout zero", func(c *Config) { c.KeepaliveTimeout = 0 }, "keepalive timeout must be positive"},
		{"keepalive timeout 1ns", func(c *Config) { c.KeepaliveTimeout = time.Nanosecond }, ""},
		{"frame timeout zero", func(c *Config) { c.FrameTimeout = 0 }, "frame timeout must be positive"},
		{"frame timeout 1ns", func(c *Config) { c.FrameTimeout = time.Nanosecond }, ""},
		{"init timeout zero (off)", func(c *Config) { c.InitTimeout = 0 }, ""},
		{"init timeout negative", func(c *Config) { c.InitTimeout = -time.Nanosecond }, "init timeout must not be negative"},
		{"write timeout zero", func(c *Config) { c.WriteTimeout = 0 }, "write timeout must be positive"},
		{"write timeout 1ns", func(c *Config) { c.WriteTimeout = time.Nanosecond }, ""},
		{"max inflight zero", func(c *Config) { c.MaxInflight = 0 }, "max inflight must be positive"},
		{"max inflight one", func(c *Config) { c.MaxInflight = 1 }, ""},
		{"queue of one message", func(c *Config) { c.MaxQueuedBytes = c.MaxMessageSize }, ""},
		{"queue one byte short", func(c *Config) { c.MaxQueuedBytes = c.MaxMessageSize - 1 }, "max queued bytes 1048575 must hold at least one message (1048576)"},
		{"recent ids zero", func(c *Config) { c.RecentIDs = 0 }, ""},
		{"recent ids negative", func(c *Config) { c.RecentIDs = -1 }, "recent ids must not be negative"},
		{"max connections zero (no limit)", func(c *Config) { c.MaxConnections = 0 }, ""},
		{"max connections negative", func(c *Config) { c.MaxConnections = -1 }, "max connections must not be negative"},
		{"no metrics", func(c *Config) { c.Metrics = nil }, "metrics are required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig().WithDefaults()
			tc.mutate(&c)
			err := c.Validate()
			if tc.errs == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tc.errs, err.Error())
		})
	}
}

// Every error is reported, not only the first, so that an operator fixes a
// configuration in one round.
func TestConfigValidateReportsAll(t *testing.T) {
	c := DefaultConfig().WithDefaults()
	c.KeepaliveInterval, c.WriteTimeout, c.MaxInflight = 0, 0, 0
	err := c.Validate()
	require.Error(t, err)
	assert.Equal(t, "keepalive interval must be positive\nwrite timeout must be positive\nmax inflight must be positive", err.Error())
}

// NewServer and NewClientConn refuse a configuration Validate refuses,
// after filling in the defaults (a zero value is a default, not an error).
func TestNewServerValidates(t *testing.T) {
	_, err := NewServer(Config{MaxMessageSize: 1000}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "max message size 1000")
	_, err = NewServer(Config{}, nil)
	assert.NoError(t, err, "zero values take the defaults")
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
