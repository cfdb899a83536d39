package auth

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// AnonymousAllowed decides whether a gateway without auth file may start.
// It may when every listen address binds to loopback (127.0.0.0/8, ::1,
// "localhost"), or when allowAnonymous is set (the operator's explicit
// --allow-anonymous). Empty addresses are listeners that are off and are
// ignored. Otherwise the error, wrapping ErrAnonymousNotAllowed, names each
// non-loopback address and what to do.
//
// Host names other than "localhost" count as non-loopback: they are not
// resolved, and the decision must not depend on DNS.
func AnonymousAllowed(listenAddrs []string, allowAnonymous bool) (bool, error) {
	open := NonLoopback(listenAddrs)
	if len(open) == 0 || allowAnonymous {
		return true, nil
	}
	described := make([]string, len(open))
	for i, a := range open {
		described[i] = describeAddr(a)
	}
	return false, fmt.Errorf("%w: %s reachable from other hosts, and without an auth file every client "+
		"could call every method; pass --auth-file FILE to require credentials, bind to 127.0.0.1 instead, "+
		"or pass --allow-anonymous to run open on purpose",
		ErrAnonymousNotAllowed, strings.Join(described, ", ")+pluralIs(len(open)))
}

// NonLoopback returns the listen addresses that are not loopback-only,
// skipping empty ones (listeners that are off).
func NonLoopback(listenAddrs []string) []string {
	var out []string
	for _, a := range listenAddrs {
		if a != "" && !isLoopback(hostOf(a)) {
			out = append(out, a)
		}
	}
	return out
}

// hostOf returns the host part of "host:port", or the whole address when
// it has no port.
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]")
}

func isLoopback(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.Unmap().IsLoopback()
}

func describeAddr(a string) string {
	h := hostOf(a)
	if ip, err := netip.ParseAddr(h); h == "" || (err == nil && ip.IsUnspecified()) {
		return a + " (all interfaces)"
	}
	return a
}

func pluralIs(n int) string {
	if n == 1 {
		return " is"
	}
	return " are"
}
