package egress

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/egress/hostpattern"
)

// What the resolver and the upstream can do wrong, and the 403 each gets.
func TestProxyRefusesWhatCannotBeReached(t *testing.T) {
	up := &upstream{fail: map[string]error{
		"93.184.216.40:443": errors.New("connection refused"),
		"93.184.216.41:443": errors.New("i/o timeout"),
	}}
	h := start(t, Config{Resolver: names{
		"empty.example":  {},
		"mixed.example":  {"93.184.216.34", "10.0.0.1"},
		"down.example":   {"93.184.216.40", "93.184.216.41"},
		"mapped.example": {"::ffff:127.0.0.1"},
	}}, allowAll(), up)
	for target, want := range map[string]string{
		"nope.example:443":   "403 Forbidden egress denied: nope.example:443 (resolve_failed: the name does not resolve)",
		"empty.example:443":  "403 Forbidden egress denied: empty.example:443 (resolve_failed: the name does not resolve)",
		"mixed.example:443":  "403 Forbidden egress denied: mixed.example:443 (private address 10.0.0.1)",
		"mapped.example:443": "403 Forbidden egress denied: mapped.example:443 (loopback address 127.0.0.1)",
	} {
		_, _, status := h.connect(t, target)
		assert.Equal(t, want, status, target)
	}
	_, _, status := h.connect(t, "down.example:443")
	assert.Contains(t, status, "502 Bad Gateway", "every address failed: unreachable, not refused")
	h.stop()
	assert.Equal(t, []string{"93.184.216.40:443", "93.184.216.41:443"}, up.dialled(),
		"only the name whose every address passed is dialled, each address in turn")
}

// When the first address does not answer, the next one is tried.
func TestProxyDialsTheNextAddress(t *testing.T) {
	up := &upstream{fail: map[string]error{"[2606:2800:220:1::1]:443": errors.New("network unreachable")}}
	h := start(t, Config{Resolver: names{"two.example": {"2606:2800:220:1::1", "93.184.216.34"}}}, allowAll(), up)
	c, _, status := h.connect(t, "two.example:443")
	require.Equal(t, "200 Connection established", status)
	_ = c.Close()
	h.stop()
	assert.Equal(t, []string{"[2606:2800:220:1::1]:443", "93.184.216.34:443"}, up.dialled())
}

// Ports of the destination at their bounds: 1 and 65535 are checked
// against the policy, 0 and 65536 are bad requests.
func TestProxyDestinationPorts(t *testing.T) {
	h := start(t, Config{Resolver: names{"a.example": {"93.184.216.34"}}}, allowAll(), &upstream{})
	// A slice, not a map: the dials asserted below happen in this order.
	for _, tc := range []struct{ target, want string }{
		{"a.example:1", "200 Connection established"},
		{"a.example:65535", "200 Connection established"},
		{"a.example:0", `403 Forbidden egress denied: ? (bad_request: bad destination "a.example:0")`},
		{"a.example:65536", `403 Forbidden egress denied: ? (bad_request: bad destination "a.example:65536")`},
		{":443", `403 Forbidden egress denied: ? (bad_request: bad destination ":443")`},
	} {
		c, _, status := h.connect(t, tc.target)
		assert.Equal(t, tc.want, status, tc.target)
		if c != nil {
			_ = c.Close()
		}
	}
	h.stop()
	assert.Equal(t, []string{"93.184.216.34:1", "93.184.216.34:65535"}, h.up.dialled())
}

// Private rules let exactly their name, range or address and port through.
func TestPrivateRules(t *testing.T) {
	rules, err := ParsePrivates([]string{"127.0.0.1:8080", "10.1.2.3/8:*", "db.internal:5432", "[::ffff:192.168.9.9]:443", "172.16.0.0/12:22"})
	require.NoError(t, err)
	pol := &Policy{Allow: allowAll().Allow, Private: rules}
	addr := netip.MustParseAddr
	for _, tc := range []struct {
		host string
		addr string
		port int
		want Reason
	}{
		{"127.0.0.1", "127.0.0.1", 8080, ReasonNone},
		{"any.name", "127.0.0.1", 8080, ReasonNone},
		{"127.0.0.1", "127.0.0.1", 8081, ReasonLoopback},
		{"127.0.0.2", "127.0.0.2", 8080, ReasonLoopback},
		{"x", "10.200.0.1", 1, ReasonNone},
		{"x", "10.0.0.0", 65535, ReasonNone},
		{"x", "11.0.0.1", 1, ReasonNone},
		{"x", "192.168.1.1", 80, ReasonPrivate},
		{"db.internal", "192.168.5.5", 5432, ReasonNone},
		{"DB.Internal.", "192.168.5.5", 5432, ReasonNone},
		{"db.internal", "192.168.5.5", 5433, ReasonPrivate},
		{"other.internal", "192.168.5.5", 5432, ReasonPrivate},
		{"x", "192.168.9.9", 443, ReasonNone},
		{"x", "::ffff:192.168.9.9", 443, ReasonNone},
		{"x", "192.168.9.9", 80, ReasonPrivate},
		{"x", "172.31.255.255", 22, ReasonNone},
		{"x", "172.31.255.255", 23, ReasonPrivate},
		{"x", "172.32.0.1", 22, ReasonNone},
		{"x", "::1", 8080, ReasonLoopback},
	} {
		assert.Equal(t, tc.want, pol.CheckAddr(tc.host, addr(tc.addr), tc.port), "%s %s:%d", tc.host, tc.addr, tc.port)
	}
	assert.Equal(t, ReasonLoopback, (&Policy{}).CheckAddr("x", addr("127.0.0.1"), 8080), "no rules")

	h := start(t, Config{Resolver: names{"db.internal": {"192.168.5.5"}}}, pol, &upstream{})
	c, _, status := h.connect(t, "db.internal:5432")
	require.Equal(t, "200 Connection established", status)
	_ = c.Close()
	_, _, status = h.connect(t, "db.internal:5433")
	assert.Equal(t, "403 Forbidden egress denied: db.internal:5433 (private address 192.168.5.5)", status)
	h.stop()
	assert.Equal(t, []string{"192.168.5.5:5432"}, h.up.dialled())
}

func TestParsePrivateErrors(t *testing.T) {
	for s, want := range map[string]string{
		"10.0.0.0/33:80":  `"10.0.0.0/33" is not a CIDR range`,
		"10.0.0.0/8:0":    "the port must be 1-65535 or *",
		"10.0.0.0/8:x":    "the port must be 1-65535 or *",
		"*:80":            "name the host or range to allow, not *",
		"db.internal":     "want host:port",
		"[fd00::/8]:443":  "",
		"fd00::/8:65535":  "",
		"fd00::/8:65536":  "the port must be 1-65535 or *",
		"10.0.0.0/8:*":    "",
		"db.internal:443": "",
	} {
		_, err := ParsePrivate(s)
		if want == "" {
			assert.NoError(t, err, s)
			continue
		}
		assert.ErrorIs(t, err, hostpattern.ErrInvalid, s)
		assert.ErrorContains(t, err, want, s)
	}
	_, err := ParsePrivates([]string{"10.0.0.0/8:*", "*"})
	assert.ErrorContains(t, err, `"*"`)
}
