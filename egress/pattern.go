package egress

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Pattern matches a destination by name (or IP literal) and port: host:port,
// *.domain:port (any name below domain, not domain itself), *:port (any
// host), with port "*" for any port; "*" alone is any host on any port.
type Pattern struct {
	host     string // lower case; "" with any
	wildcard bool   // host is a suffix: matches names ending in "."+host
	any      bool   // any host
	port     int    // 0: any port
}

// ParsePattern parses one network pattern.
func ParsePattern(s string) (Pattern, error) {
	if s == "*" {
		return Pattern{any: true}, nil
	}
	host, port, err := splitPattern(s)
	if err != nil {
		return Pattern{}, err
	}
	p := Pattern{port: port}
	switch {
	case host == "*":
		p.any = true
	case strings.HasPrefix(host, "*."):
		p.wildcard, p.host = true, host[2:]
		if _, err := netip.ParseAddr(p.host); err == nil || !validHostname(p.host) {
			return Pattern{}, fmt.Errorf("%w: %q: a wildcard needs a domain name after \"*.\"", ErrBadPattern, s)
		}
	default:
		p.host = normalizeHost(host)
		if _, err := netip.ParseAddr(host); err != nil && !validHostname(host) {
			return Pattern{}, fmt.Errorf("%w: %q: %q is neither a host name nor an IP address", ErrBadPattern, s, host)
		}
	}
	return p, nil
}

// ParsePatterns parses a list; the first bad entry is the error.
func ParsePatterns(list []string) ([]Pattern, error) {
	out := make([]Pattern, 0, len(list))
	for _, s := range list {
		p, err := ParsePattern(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// splitPattern splits host:port (IPv6 in brackets) and checks the port.
func splitPattern(s string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return "", 0, fmt.Errorf("%w: %q: want host:port, such as api.example.com:443", ErrBadPattern, s)
	}
	if portStr == "*" {
		return strings.ToLower(host), 0, nil
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 || portStr[0] == '0' || portStr[0] == '+' {
		return "", 0, fmt.Errorf("%w: %q: the port must be 1-65535 or *", ErrBadPattern, s)
	}
	return strings.ToLower(host), port, nil
}

// validHostname accepts DNS names of letters, digits and inner hyphens.
func validHostname(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// Match reports whether host (lower case, no trailing dot) and port match.
func (p Pattern) Match(host string, port int) bool {
	if p.port != 0 && p.port != port {
		return false
	}
	switch {
	case p.any:
		return true
	case p.wildcard:
		return strings.HasSuffix(host, "."+p.host)
	default:
		return host == p.host
	}
}

func (p Pattern) String() string {
	port := "*"
	if p.port != 0 {
		port = strconv.Itoa(p.port)
	}
	switch {
	case p.any && p.port == 0:
		return "*"
	case p.any:
		return "*:" + port
	case p.wildcard:
		return "*." + p.host + ":" + port
	}
	return net.JoinHostPort(p.host, port)
}

// PrivateRule lets a special (private, loopback, ...) address through:
// host:port allows the addresses that name resolves to, cidr:port (or
// ip:port) the addresses in that range whatever name led there.
type PrivateRule struct {
	name   Pattern
	prefix netip.Prefix // valid for cidr and ip rules
}

// ParsePrivate parses one --egress-allow-private entry.
func ParsePrivate(s string) (PrivateRule, error) {
	i := strings.LastIndexByte(s, ':')
	if i > 0 && strings.Contains(s[:i], "/") {
		prefix, err := netip.ParsePrefix(strings.Trim(s[:i], "[]"))
		if err != nil {
			return PrivateRule{}, fmt.Errorf("%w: %q: %q is not a CIDR range", ErrBadPattern, s, s[:i])
		}
		_, port, err := splitPattern("h:" + s[i+1:])
		if err != nil {
			return PrivateRule{}, fmt.Errorf("%w: %q: the port must be 1-65535 or *", ErrBadPattern, s)
		}
		return PrivateRule{name: Pattern{any: true, port: port}, prefix: prefix.Masked()}, nil
	}
	p, err := ParsePattern(s)
	if err != nil {
		return PrivateRule{}, err
	}
	if p.any {
		return PrivateRule{}, fmt.Errorf("%w: %q: name the host or range to allow, not *", ErrBadPattern, s)
	}
	r := PrivateRule{name: p}
	if addr, err := netip.ParseAddr(p.host); err == nil {
		addr = addr.Unmap()
		r.prefix = netip.PrefixFrom(addr, addr.BitLen())
		r.name = Pattern{any: true, port: p.port}
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
