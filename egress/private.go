package egress

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/skillgate/skillgate/egress/hostpattern"
)

// PrivateRule lets a special (private, loopback, ...) address through:
// host:port allows the addresses that name resolves to, cidr:port (or
// ip:port) the addresses in that range whatever name led there.
type PrivateRule struct {
	name   hostpattern.Pattern
	prefix netip.Prefix // valid for cidr and ip rules
}

// ParsePrivate parses one --egress-allow-private entry.
func ParsePrivate(s string) (PrivateRule, error) {
	i := strings.LastIndexByte(s, ':')
	if i > 0 && strings.Contains(s[:i], "/") {
		prefix, err := netip.ParsePrefix(strings.Trim(s[:i], "[]"))
		if err != nil {
			return PrivateRule{}, fmt.Errorf("%w: %q: %q is not a CIDR range", hostpattern.ErrInvalid, s, s[:i])
		}
		ports, err := hostpattern.Parse("*:" + s[i+1:])
		if err != nil {
			return PrivateRule{}, fmt.Errorf("%w: %q: the port must be 1-65535 or *", hostpattern.ErrInvalid, s)
		}
		return PrivateRule{name: ports, prefix: prefix.Masked()}, nil
	}
	p, err := hostpattern.Parse(s)
	if err != nil {
		return PrivateRule{}, err
	}
	if p.IsAny() {
		return PrivateRule{}, fmt.Errorf("%w: %q: name the host or range to allow, not *", hostpattern.ErrInvalid, s)
	}
	r := PrivateRule{name: p}
	if addr, err := netip.ParseAddr(p.Host()); err == nil {
		addr = addr.Unmap()
		r.prefix = netip.PrefixFrom(addr, addr.BitLen())
		r.name = hostpattern.AnyHost(p.Port())
	}
	return r, nil
}

// ParsePrivates parses a list; the first bad entry is the error.
func ParsePrivates(list []string) ([]PrivateRule, error) {
	out := make([]PrivateRule, 0, len(list))
	for _, s := range list {
		r, err := ParsePrivate(s)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// explicit reports whether the rule names its destination: a host name or
// a single address, not a range.
func (r PrivateRule) explicit() bool {
	return !r.prefix.IsValid() || r.prefix.IsSingleIP()
}

func (r PrivateRule) match(host string, addr netip.Addr, port int) bool {
	if r.prefix.IsValid() && !r.prefix.Contains(addr) {
		return false
	}
	return r.name.Match(host, port)
}
