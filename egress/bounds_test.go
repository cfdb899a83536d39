package egress

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The names of reasons are metric labels and appear in refusals: stable,
// and "unknown" outside the table instead of a panic.
func TestReasonNames(t *testing.T) {
	want := []string{"allowed", "not_allowed", "denied", "loopback", "private", "link_local",
		"multicast", "metadata", "reserved", "resolve_failed", "connection_limit", "connect_failed", "bad_request",
		"header_too_large", "host"}
	for i, name := range want {
		assert.Equal(t, name, Reason(i).String())
	}
	assert.Equal(t, "unknown", Reason(len(want)).String())
	assert.Equal(t, "unknown", Reason(-1).String())
}

func TestConfigValidateNames(t *testing.T) {
	assert.ErrorContains(t, Config{MaxConns: -1}.Validate(), "egress: invalid config: MaxConns is negative")
	assert.ErrorContains(t, Config{MaxBytes: -1}.Validate(), "MaxBytes is negative")
	assert.ErrorContains(t, Config{ConnectTimeout: -1}.Validate(), "a timeout is negative")
	assert.ErrorContains(t, Config{RequestTimeout: -1}.Validate(), "a timeout is negative")
	assert.ErrorContains(t, Config{MaxHeaderBytes: -1}.Validate(), "MaxHeaderBytes is negative")
	assert.ErrorContains(t, Config{MaxHeaderReaders: -1}.Validate(), "MaxHeaderReaders is negative")
	assert.NoError(t, Config{MaxConns: 1, MaxBytes: 1, ConnectTimeout: 1, RequestTimeout: 1}.Validate())
	_, err := New(Config{MaxConns: -1})
	assert.ErrorContains(t, err, "MaxConns is negative")
}
