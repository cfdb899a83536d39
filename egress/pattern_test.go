package egress

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParsePattern(t *testing.T) {
	for _, s := range []string{
		"api.acme.example:443", "*.files.acme.example:443", "*", "*:443", "host:*",
		"127.0.0.1:8080", "[::1]:443", "API.Example.COM:80", "a-b.c_d.example:1",
	} {
		_, err := ParsePattern(s)
		assert.NoError(t, err, s)
	}
	for _, s := range []string{
		"", "api.example", "api.example:", ":443", "api.example:0", "api.example:65536",
		"api.example:08", "api.example:+8", "*.:443", "*.127.0.0.1:443", "a..b:443", "-a.b:443",
		"a b:443", "http://a.b:443", "*foo.example:443", "ex*ample.com:443", "::1:443",
	} {
		_, err := ParsePattern(s)
		assert.ErrorIs(t, err, ErrBadPattern, s)
	}
}

func TestPatternMatch(t *testing.T) {
	p := func(s string) Pattern {
		pat, err := ParsePattern(s)
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

func TestParsePrivate(t *testing.T) {
	for _, s := range []string{"127.0.0.1:8080", "10.0.0.0/8:*", "db.internal:5432", "fd00::/8:443"} {
		_, err := ParsePrivate(s)
		assert.NoError(t, err, s)
	}
	for _, s := range []string{"*", "*:80", "10.0.0.0/33:80", "10.0.0.0/8", "10.0.0.0/8:x", "nope"} {
		_, err := ParsePrivate(s)
		assert.ErrorIs(t, err, ErrBadPattern, s)
	}
}

func TestClassify(t *testing.T) {
	for addr, want := range map[string]Reason{
		"93.184.216.34": ReasonNone, "2606:2800:220:1::1": ReasonNone,
		"127.0.0.1": ReasonLoopback, "127.9.9.9": ReasonLoopback, "::1": ReasonLoopback,
		"::ffff:127.0.0.1": ReasonLoopback, "10.1.2.3": ReasonPrivate, "172.16.0.1": ReasonPrivate,
		"192.168.1.1": ReasonPrivate, "fd12::1": ReasonPrivate, "100.64.0.1": ReasonPrivate,
		"169.254.169.254": ReasonMetadata, "fd00:ec2::254": ReasonMetadata, "100.100.100.200": ReasonMetadata,
		"169.254.1.1": ReasonLinkLocal, "fe80::1": ReasonLinkLocal, "224.0.0.1": ReasonMulticast,
		"ff02::1": ReasonMulticast, "0.0.0.0": ReasonReserved, "::": ReasonReserved,
		"255.255.255.255": ReasonReserved, "64:ff9b::a00:1": ReasonReserved, "2002:a00:1::": ReasonReserved,
	} {
		assert.Equal(t, want, Classify(netip.MustParseAddr(addr)), addr)
	}
}

func TestPolicyLayersAndDeny(t *testing.T) {
	pats := func(s ...string) []Pattern {
		out, err := ParsePatterns(s)
		require.NoError(t, err)
		return out
	}
	pol := &Policy{
		Allow: [][]Pattern{pats("*.acme.example:443", "api.other.example:443"), pats("*")},
		Deny:  pats("secret.acme.example:*"),
	}
	assert.Equal(t, ReasonNone, pol.CheckName("api.acme.example", 443))
	assert.Equal(t, ReasonNone, pol.CheckName("API.acme.example.", 443), "case and trailing dot")
	assert.Equal(t, ReasonNotAllowed, pol.CheckName("api.acme.example", 80))
	assert.Equal(t, ReasonDenied, pol.CheckName("secret.acme.example", 443))
	narrowed := &Policy{Allow: append(pol.Allow, pats("api.other.example:443"))}
	assert.Equal(t, ReasonNotAllowed, narrowed.CheckName("api.acme.example", 443), "the identity layer narrows")
	assert.Equal(t, ReasonNone, narrowed.CheckName("api.other.example", 443))
	assert.False(t, (&Policy{Allow: [][]Pattern{pats("*"), {}}}).Enabled(), "an empty layer allows nothing")
	assert.False(t, (*Policy)(nil).Enabled())
}
