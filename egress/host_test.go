package egress

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Addresses that carry another address, or that no public host answers
// at, are not public; at the edges of each range the neighbours are.
// IPv4-mapped addresses, the form resolvers give A records in, are
// whatever the IPv4 address they carry is.
func TestClassifyEmbeddedAndDocumentationForms(t *testing.T) {
	for addr, want := range map[string]Reason{
		"192.0.2.1": ReasonReserved, "192.0.2.255": ReasonReserved, "198.51.100.7": ReasonReserved,
		"203.0.113.200": ReasonReserved, "2001:db8::1": ReasonReserved, "2001:db8:ffff::1": ReasonReserved,
		"3fff::1":         ReasonReserved,
		"::7f00:1":        ReasonReserved,                                       // IPv4-compatible ::127.0.0.1
		"::5db8:d822":     ReasonReserved,                                       // IPv4-compatible ::93.184.216.34
		"::ffff:0:7f00:1": ReasonReserved, "::ffff:0:5db8:d822": ReasonReserved, // IPv4-translated
		"2001::5db8:d822":  ReasonReserved, // Teredo
		"fec0::1":          ReasonReserved, // site-local
		"::ffff:192.0.2.1": ReasonReserved, "::ffff:169.254.169.254": ReasonMetadata,
		"::ffff:10.1.2.3": ReasonPrivate, "::ffff:127.0.0.1": ReasonLoopback,
		"::ffff:93.184.216.34": ReasonNone,
		"192.0.1.255":          ReasonNone, "192.0.3.0": ReasonNone, "198.51.99.255": ReasonNone,
		"198.51.101.0": ReasonNone, "203.0.112.255": ReasonNone, "203.0.114.0": ReasonNone,
		"2001:db7:ffff::1": ReasonNone, "2001:db9::1": ReasonNone, "2001:1::1": ReasonNone,
	} {
		assert.Equal(t, want, Classify(netip.MustParseAddr(addr)), addr)
	}
}

// The gateway host's own addresses are refused even when a private
// range that holds them is allowed: only a rule naming the address or
// the name lets one through. Loopback keeps its own rules.
func TestHostAddressesNeedARuleNamingThem(t *testing.T) {
	rules, err := ParsePrivates([]string{"10.0.0.0/8:*", "93.184.216.0/24:*", "93.184.216.99:8443",
		"self.example:9443", "127.0.0.0/8:*"})
	require.NoError(t, err)
	own := []netip.Addr{netip.MustParseAddr("93.184.216.99"), netip.MustParseAddr("10.9.9.9"), netip.MustParseAddr("127.0.0.1")}
	h := start(t, Config{
		HostAddrs: func() ([]netip.Addr, error) { return own, nil },
		Resolver: names{
			"self.example": {"93.184.216.99"}, "mappedself.example": {"::ffff:93.184.216.99"},
			"other.example": {"93.184.216.98"}, "lan.example": {"10.1.1.1"}, "gw.example": {"10.9.9.9"},
			"lo.example": {"127.0.0.1"},
		},
	}, &Policy{Allow: allowAll().Allow, Private: rules}, &upstream{})
	for _, tc := range []struct{ target, want string }{
		{"self.example:443", "403 Forbidden egress denied: self.example:443 (host address 93.184.216.99)"},
		{"mappedself.example:443", "403 Forbidden egress denied: mappedself.example:443 (host address 93.184.216.99)"},
		{"gw.example:22", "403 Forbidden egress denied: gw.example:22 (host address 10.9.9.9)"},
		{"10.9.9.9:22", "403 Forbidden egress denied: 10.9.9.9:22 (host address 10.9.9.9)"},
		{"self.example:8443", "200 Connection established"},
		{"self.example:9443", "200 Connection established"},
		{"other.example:443", "200 Connection established"},
		{"lan.example:22", "200 Connection established"},
		{"lo.example:443", "200 Connection established"},
	} {
		c, _, status := h.connect(t, tc.target)
		assert.Equal(t, tc.want, status, tc.target)
		if c != nil {
			_ = c.Close()
		}
	}
	h.stop()
	assert.Equal(t, []string{"93.184.216.99:8443", "93.184.216.99:9443", "93.184.216.98:443", "10.1.1.1:22", "127.0.0.1:443"},
		h.up.dialled())
}

// Without the host's addresses the proxy cannot tell them apart: it
// refuses rather than guess.
func TestHostAddressesUnknownRefuse(t *testing.T) {
	h := start(t, Config{
		HostAddrs: func() ([]netip.Addr, error) { return nil, errors.New("netlink: no answer") },
		Resolver:  names{"a.example": {"93.184.216.34"}},
	}, allowAll(), &upstream{})
	_, _, status := h.connect(t, "a.example:443")
	assert.Equal(t, "403 Forbidden egress denied: a.example:443 (host: the host's own addresses are unknown: netlink: no answer)", status)
	h.stop()
	assert.Empty(t, h.up.dialled())
}

// hostAddr is an address of one of the host's interfaces that is
// neither loopback nor link-local, IPv4 first.
func hostAddr(t *testing.T) netip.Addr {
	t.Helper()
	own, err := interfaceAddrs()
	require.NoError(t, err)
	var found netip.Addr
	for _, a := range own {
		if a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsMulticast() {
			continue
		}
		if a.Is4() {
			return a
		}
		if !found.IsValid() {
			found = a
		}
	}
	if !found.IsValid() {
		t.Skip("the host has no address but loopback and link-local ones")
	}
	return found
}

// The real proxy does not reach a service the host binds to every
// address through the host's own interface address, even when a range
// holding it is allowed; a rule naming the address does.
func TestProxyRefusesTheHostThroughItsInterfaceAddress(t *testing.T) {
	// Nothing is served on the host's address and nothing is dialed there:
	// the proxy refuses before connecting (the code before this check
	// dialed, and answered 502 for the closed port, or reached a service
	// bound to 0.0.0.0). Tests send traffic to loopback only.
	own := hostAddr(t)
	target := net.JoinHostPort(own.String(), "9")
	wide := netip.PrefixFrom(own, own.BitLen()-8).Masked()
	rules, err := ParsePrivates([]string{wide.String() + ":*"})
	require.NoError(t, err)
	proxy := serve(t, Config{}, &Policy{Allow: allowAll().Allow, Private: rules})
	c, err := net.Dial("tcp", proxy)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, "403 Forbidden egress denied: "+target+" (host address "+own.String()+")",
		resp.Status+" "+strings.TrimSpace(string(body)), "a range that holds the host's address does not let it through")
}
