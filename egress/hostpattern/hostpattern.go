// Package hostpattern parses and matches the network destination patterns
// of skill manifests, credentials and the egress flags (host:port,
// *.domain:port, *:port, *). It imports only the standard library, so that
// the packages that merely validate a pattern (skills, dispatch/auth) do
// not depend on the egress proxy and its metrics.
package hostpattern

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// ErrInvalid: a network pattern is not host:port, *.domain:port or, for
// the egress proxy's private rules, cidr:port.
var ErrInvalid = errors.New("invalid network pattern")

// Pattern matches a destination by name (or IP literal) and port: host:port,
// *.domain:port (any name below domain, not domain itself), *:port (any
// host), with port "*" for any port; "*" alone is any host on any port.
type Pattern struct {
	host     string // lower case; "" with any
	wildcard bool   // host is a suffix: matches names ending in "."+host
	any      bool   // any host
	port     int    // 0: any port
}

// AnyHost is the pattern of every host on port (0: any port), which a
// range rule of the egress proxy pairs with its addresses.
func AnyHost(port int) Pattern { return Pattern{any: true, port: port} }

// Parse parses one network pattern.
func Parse(s string) (Pattern, error) {
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
			return Pattern{}, fmt.Errorf("%w: %q: a wildcard needs a domain name after \"*.\"", ErrInvalid, s)
		}
	default:
		p.host = NormalizeHost(host)
		if _, err := netip.ParseAddr(host); err != nil && !validHostname(host) {
			return Pattern{}, fmt.Errorf("%w: %q: %q is neither a host name nor an IP address", ErrInvalid, s, host)
		}
	}
	return p, nil
}

// ParseList parses a list; the first bad entry is the error.
func ParseList(list []string) ([]Pattern, error) {
	out := make([]Pattern, 0, len(list))
	for _, s := range list {
		p, err := Parse(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// NormalizeHost lower-cases names, drops a trailing dot and writes IP
// literals in their canonical form, so that ::0001 matches a rule for ::1.
func NormalizeHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap().String()
	}
	return h
}

// splitPattern splits host:port (IPv6 in brackets) and checks the port.
func splitPattern(s string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return "", 0, fmt.Errorf("%w: %q: want host:port, such as api.example.com:443", ErrInvalid, s)
	}
	if portStr == "*" {
		return strings.ToLower(host), 0, nil
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 || portStr[0] == '0' || portStr[0] == '+' {
		return "", 0, fmt.Errorf("%w: %q: the port must be 1-65535 or *", ErrInvalid, s)
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

// IsAny reports whether p matches every host (on its port).
func (p Pattern) IsAny() bool { return p.any }

// Host is the host name or canonical IP literal p names; "" for a pattern
// of any host, and the domain (without "*.") of a wildcard.
func (p Pattern) Host() string { return p.host }

// Port is the port p matches; 0 is any port.
func (p Pattern) Port() int { return p.port }

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
