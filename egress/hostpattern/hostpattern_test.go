package hostpattern

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	for _, s := range []string{
		"api.acme.example:443", "*.files.acme.example:443", "*", "*:443", "host:*",
		"127.0.0.1:8080", "[::1]:443", "API.Example.COM:80", "a-b.c_d.example:1",
	} {
		_, err := Parse(s)
		assert.NoError(t, err, s)
	}
	for _, s := range []string{
		"", "api.example", "api.example:", ":443", "api.example:0", "api.example:65536",
		"api.example:08", "api.example:+8", "*.:443", "*.127.0.0.1:443", "a..b:443", "-a.b:443",
		"a b:443", "http://a.b:443", "*foo.example:443", "ex*ample.com:443", "::1:443",
	} {
		_, err := Parse(s)
		assert.ErrorIs(t, err, ErrInvalid, s)
	}
}

func TestPatternMatch(t *testing.T) {
	p := func(s string) Pattern {
		pat, err := Parse(s)
		require.NoError(t, err)
		return pat
	}
	for _, tc := range []struct {
		pat, host string
		port      int
		want      bool
	}{
		{"api.acme.example:443", "api.acme.example", 443, true},
		{"api.acme.example:443", "api.acme.example", 80, false},
		{"api.acme.example:443", "x.api.acme.example", 443, false},
		{"API.acme.example:443", "api.acme.example", 443, true},
		{"*.acme.example:443", "a.acme.example", 443, true},
		{"*.acme.example:443", "a.b.acme.example", 443, true},
		{"*.acme.example:443", "acme.example", 443, false},
		{"*.acme.example:443", "evilacme.example", 443, false},
		{"*:443", "anything", 443, true},
		{"*", "anything", 1, true},
		{"host:*", "host", 9, true},
	} {
		assert.Equal(t, tc.want, p(tc.pat).Match(tc.host, tc.port), "%s vs %s:%d", tc.pat, tc.host, tc.port)
	}
}

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
		_, err := Parse(s)
		assert.NoError(t, err, s)
	}
	for _, s := range []string{
		"h:65536", "h:-1", label63 + "a.example:443", name254 + ":443",
		"a-.example:443", "a.-b:443", "{.example:443", "`.example:443", "/.example:443",
		"a..example:443", "*." + name254 + ":443", "*.a-:443",
	} {
		_, err := Parse(s)
		assert.ErrorIs(t, err, ErrInvalid, s)
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
		_, err := Parse(s)
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
		p, err := Parse(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, p.String(), in)
	}
}

func TestPatternPorts(t *testing.T) {
	p, err := Parse("h:1")
	require.NoError(t, err)
	assert.True(t, p.Match("h", 1))
	assert.False(t, p.Match("h", 2))
	assert.False(t, p.Match("h", 0))
	any, err := Parse("h:*")
	require.NoError(t, err)
	assert.True(t, any.Match("h", 1))
	assert.True(t, any.Match("h", 65535))
	assert.False(t, any.Match("g", 1))
}

// A list parses in order; its first bad entry is the error, and nothing
// of the list is returned with it.
func TestParseList(t *testing.T) {
	ps, err := ParseList([]string{"a.example:1", "*.b.example:*", "*"})
	require.NoError(t, err)
	require.Len(t, ps, 3)
	assert.Equal(t, "a.example:1", ps[0].String())
	assert.Equal(t, "*.b.example:*", ps[1].String())
	assert.True(t, ps[2].IsAny())
	assert.Equal(t, 0, ps[2].Port())
	assert.Empty(t, ps[2].Host())

	ps, err = ParseList([]string{"a.example:1", "bad", "c:0"})
	assert.ErrorIs(t, err, ErrInvalid)
	assert.ErrorContains(t, err, `"bad"`, "the first bad entry")
	assert.Nil(t, ps)

	ps, err = ParseList(nil)
	require.NoError(t, err)
	assert.Empty(t, ps)
}
