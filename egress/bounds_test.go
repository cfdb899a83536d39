package egress

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every limit of a pattern at, just inside and just outside its bound:
// ports 1 and 65535, names of 253 characters and labels of 63, and the
// ends of each character range a label may use.
func TestPatternBounds(t *testing.T) {
	label63 := strings.Repeat("a", 63)
	// Four labels of 63 and dots make 255; cut to exactly 253 and 254.
	name := label63 + "." + label63 + "." + label63 + "." + label63
	name253, name254 := name[:253], name[:254]
	require.Len(t, name253, 253)
	for _, s := range []string{
		"h:1", "h:65535", label63 + ".example:443", name253 + ":443",
		"az09-_.example:443", "z.example:443", "0.example:443", "9.example:443",
		"*.z9.example:443", "a-z.example:443",
	} {
		_, err := ParsePattern(s)
		assert.NoError(t, err, s)
	}
	for _, s := range []string{
		"h:65536", "h:-1", label63 + "a.example:443", name254 + ":443",
		"a-.example:443", "a.-b:443", "{.example:443", "`.example:443", "/.example:443",
		"a..example:443", "*." + name254 + ":443", "*.a-:443",
	} {
		_, err := ParsePattern(s)
		assert.ErrorIs(t, err, ErrBadPattern, s)
	}
}

func TestPatternErrorsNameTheProblem(t *testing.T) {
	for s, want := range map[string]string{
		"h:0":                "the port must be 1-65535 or *",
		"h:65536":            "the port must be 1-65535 or *",
		"api.example":        "want host:port, such as api.example.com:443",
		"*.1.2.3.4:443":      `a wildcard needs a domain name after "*."`,
		"a_b c.example:1":    `"a_b c.example" is neither a host name nor an IP address`,
		"*.-bad.example:443": `a wildcard needs a domain name after "*."`,
	} {
		_, err := ParsePattern(s)
		assert.ErrorContains(t, err, want, s)
		assert.ErrorContains(t, err, "invalid network pattern: "+`"`+s+`"`, s)
	}
}

// A pattern prints as it is written, in canonical form.
func TestPatternString(t *testing.T) {
	for in, want := range map[string]string{
		"*":                    "*",
		"*:*":                  "*",
		"*:443":                "*:443",
		"*.Acme.example:443":   "*.acme.example:443",
		"*.acme.example:*":     "*.acme.example:*",
		"API.example:80":       "api.example:80",
		"api.example:*":        "api.example:*",
		"[::0001]:8080":        "[::1]:8080",
		"127.0.0.1:65535":      "127.0.0.1:65535",
		"files.acme.example:1": "files.acme.example:1",
	} {
		p, err := ParsePattern(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, p.String(), in)
	}
}

func TestPatternPorts(t *testing.T) {
	p, err := ParsePattern("h:1")
	require.NoError(t, err)
	assert.True(t, p.Match("h", 1))
	assert.False(t, p.Match("h", 2))
	assert.False(t, p.Match("h", 0))
	any, err := ParsePattern("h:*")
	require.NoError(t, err)
	assert.True(t, any.Match("h", 1))
	assert.True(t, any.Match("h", 65535))
	assert.False(t, any.Match("g", 1))
}

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
