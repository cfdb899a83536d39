package egress

import (
	"net/netip"

	"github.com/skillgate/skillgate/egress/hostpattern"
)

// Policy decides which destinations one run may reach. A destination is
// allowed when every allow layer has a matching pattern (a skill gets the
// intersection of its own list, its caller's and the operator's), no deny
// pattern matches, and every address it resolves to is an ordinary public
// one or is let through by a private rule.
type Policy struct {
	// Allow holds the layers; a run with no layers reaches nothing.
	Allow [][]hostpattern.Pattern
	// Deny refuses whatever it matches, before any allow.
	Deny []hostpattern.Pattern
	// Private lets special addresses through.
	Private []PrivateRule
}

// Enabled reports whether the policy can allow anything at all: a run
// without it gets no network.
func (p *Policy) Enabled() bool {
	if p == nil || len(p.Allow) == 0 {
		return false
	}
	for _, layer := range p.Allow {
		if len(layer) == 0 {
			return false
		}
	}
	return true
}

// CheckName checks a destination before resolving it.
func (p *Policy) CheckName(host string, port int) Reason {
	host = hostpattern.NormalizeHost(host)
	for _, d := range p.Deny {
		if d.Match(host, port) {
			return ReasonDenied
		}
	}
	if !p.Enabled() {
		return ReasonNotAllowed
	}
	for _, layer := range p.Allow {
		if !matchAny(layer, host, port) {
			return ReasonNotAllowed
		}
	}
	return ReasonNone
}

// CheckAddr checks one resolved address of host.
func (p *Policy) CheckAddr(host string, addr netip.Addr, port int) Reason {
	return p.checkAddr(host, addr, port, false)
}

// checkAddr checks one resolved address of host; ownHost says that it is
// an address of the gateway's host (other than loopback). Such an address
// reaches every service the host binds to 0.0.0.0, so only a rule naming
// that address or the host name lets it through, not a range that merely
// contains it.
func (p *Policy) checkAddr(host string, addr netip.Addr, port int, ownHost bool) Reason {
	why := Classify(addr)
	if ownHost && why != ReasonLoopback {
		why = ReasonHost
	}
	if why == ReasonNone {
		return ReasonNone
	}
	addr, host = addr.Unmap(), hostpattern.NormalizeHost(host)
	for _, r := range p.Private {
		if r.match(host, addr, port) && (why != ReasonHost || r.explicit()) {
			return ReasonNone
		}
	}
	return why
}

func matchAny(list []hostpattern.Pattern, host string, port int) bool {
	for _, p := range list {
		if p.Match(host, port) {
			return true
		}
	}
	return false
}

// Special ranges beyond what netip classifies.
var (
	metadataAddrs = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OpenStack
		netip.MustParseAddr("fd00:ec2::254"),   // AWS IPv6
		netip.MustParseAddr("100.100.100.200"), // Alibaba
		netip.MustParseAddr("169.254.170.2"),   // AWS ECS task metadata
	}
	privateRanges = []netip.Prefix{
		netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
		netip.MustParsePrefix("198.18.0.0/15"), // benchmarking
	}
	reservedRanges = []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),
		netip.MustParsePrefix("192.0.0.0/24"),
		netip.MustParsePrefix("240.0.0.0/4"), // and broadcast
		// Documentation ranges: no public host answers there, so an
		// answer in them is a host of someone's own network.
		netip.MustParsePrefix("192.0.2.0/24"),
		netip.MustParsePrefix("198.51.100.0/24"),
		netip.MustParsePrefix("203.0.113.0/24"),
		netip.MustParsePrefix("2001:db8::/32"),
		netip.MustParsePrefix("3fff::/20"),
		// Forms that carry an IPv4 address a translator or the host's
		// own stack may reach, whatever it is: NAT64, 6to4, Teredo,
		// IPv4-compatible (::a.b.c.d) and IPv4-translated
		// (::ffff:0:a.b.c.d). IPv4-mapped addresses are checked as the
		// IPv4 address they carry, which is how resolvers hand out A
		// records.
		netip.MustParsePrefix("64:ff9b::/96"),
		netip.MustParsePrefix("64:ff9b:1::/48"),
		netip.MustParsePrefix("2002::/16"),
		netip.MustParsePrefix("2001::/32"),
		netip.MustParsePrefix("::/96"),
		netip.MustParsePrefix("::ffff:0:0:0/96"),
		netip.MustParsePrefix("fec0::/10"), // deprecated site-local
		netip.MustParsePrefix("100::/64"),  // discard
	}
)

// Classify says why an address is special, or ReasonNone for an ordinary
// public address.
func Classify(a netip.Addr) Reason {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return ReasonReserved
	case containsAddr(metadataAddrs, a):
		return ReasonMetadata
	case a.IsLoopback():
		return ReasonLoopback
	case a.IsMulticast():
		return ReasonMulticast
	case a.IsLinkLocalUnicast():
		return ReasonLinkLocal
	case a.IsPrivate() || inRanges(privateRanges, a):
		return ReasonPrivate
	case a.IsUnspecified() || inRanges(reservedRanges, a) || a.Is6() && a.Zone() != "":
		return ReasonReserved
	}
	return ReasonNone
}

func containsAddr(list []netip.Addr, a netip.Addr) bool {
	for _, x := range list {
		if x == a {
			return true
		}
	}
	return false
}

func inRanges(list []netip.Prefix, a netip.Addr) bool {
	for _, p := range list {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
