package egress

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/egress/hostpattern"
)

func TestParsePrivate(t *testing.T) {
	for _, s := range []string{"127.0.0.1:8080", "10.0.0.0/8:*", "db.internal:5432", "fd00::/8:443"} {
		_, err := ParsePrivate(s)
		assert.NoError(t, err, s)
	}
	for _, s := range []string{"*", "*:80", "10.0.0.0/33:80", "10.0.0.0/8", "10.0.0.0/8:x", "nope"} {
		_, err := ParsePrivate(s)
		assert.ErrorIs(t, err, hostpattern.ErrInvalid, s)
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
	pats := func(s ...string) []hostpattern.Pattern {
		out, err := hostpattern.ParseList(s)
		require.NoError(t, err)
		return out
	}
	pol := &Policy{
		Allow: [][]hostpattern.Pattern{pats("*.acme.example:443", "api.other.example:443"), pats("*")},
		Deny:  pats("secret.acme.example:*"),
	}
	assert.Equal(t, ReasonNone, pol.CheckName("api.acme.example", 443))
	assert.Equal(t, ReasonNone, pol.CheckName("API.acme.example.", 443), "case and trailing dot")
	assert.Equal(t, ReasonNotAllowed, pol.CheckName("api.acme.example", 80))
	assert.Equal(t, ReasonDenied, pol.CheckName("secret.acme.example", 443))
	narrowed := &Policy{Allow: append(pol.Allow, pats("api.other.example:443"))}
	assert.Equal(t, ReasonNotAllowed, narrowed.CheckName("api.acme.example", 443), "the identity layer narrows")
	assert.Equal(t, ReasonNone, narrowed.CheckName("api.other.example", 443))
	assert.False(t, (&Policy{Allow: [][]hostpattern.Pattern{pats("*"), {}}}).Enabled(), "an empty layer allows nothing")
	assert.False(t, (*Policy)(nil).Enabled())
}
