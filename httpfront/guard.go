package httpfront

import (
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/transport"
)

// guard turns away, before reading the body, the requests a browser can be
// made to send on behalf of a hostile page: an HTML form posts text/plain
// (cross-site request forgery), another origin's script sends an Origin
// header, and a DNS-rebinding page reaches a loopback listener under its
// own host name. Requests that are ambiguous about who they come from (two
// Authorization headers) are refused too.
type guard struct {
	origins map[string]bool // normalized allowed origins
	hosts   map[string]bool // extra host names accepted on loopback
}

func newGuard(opts Options) guard {
	g := guard{origins: map[string]bool{}, hosts: map[string]bool{}}
	for _, o := range opts.AllowedOrigins {
		g.origins[normalizeOrigin(o)] = true
	}
	for _, h := range opts.AllowedHosts {
		g.hosts[normalizeHost(h)] = true
	}
	return g
}

// Validate checks the options an operator gives: allowed origins must be
// scheme://host[:port] and allowed hosts bare names.
func (o Options) Validate() error {
	var errs []error
	for _, s := range o.AllowedOrigins {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			strings.TrimSuffix(u.Path, "/") != "" || u.RawQuery != "" || u.User != nil {
			errs = append(errs, fmt.Errorf("allowed origin %q: want scheme://host[:port], such as https://app.example.com", s))
		}
	}
	for _, h := range o.AllowedHosts {
		if h == "" || strings.ContainsAny(h, "/:@ ") {
			errs = append(errs, fmt.Errorf("allowed host %q: want a host name without port, such as gateway.example.com", h))
		}
	}
	return errors.Join(errs...)
}

func (g guard) check(r *http.Request) *refusal {
	if !jsonContentType(r.Header.Values("Content-Type")) && len(r.Header.Values("Authorization")) <= 1 {
		return forbidden("content_type", "POST /rpc accepts only Content-Type: application/json")
	}
	return g.checkOrigin(r)
}

// checkOrigin is the part of check that every endpoint of the listener
// applies, whatever its HTTP method and body: one Authorization header, an
// allowed Origin, a loopback Host on a loopback listener.
func (g guard) checkOrigin(r *http.Request) *refusal {
	if len(r.Header.Values("Authorization")) > 1 {
		return &refusal{status: http.StatusBadRequest, reason: "duplicate_authorization",
			err: invalidHTTPRequest("send at most one Authorization header")}
	}
	if origins := r.Header.Values("Origin"); len(origins) > 0 && (len(origins) > 1 || !g.allowedOrigin(r, origins[0])) {
		return forbidden("origin", "requests from origin "+quoteName(strings.Join(origins, ", "))+
			" are not allowed; only the listener's own origin and those the operator lists with --http-allowed-origins are")
	}
	if arrivedOnLoopback(r) && !g.loopbackHost(r.Host) {
		return forbidden("host", "host "+quoteName(r.Host)+" is not a loopback name; a loopback listener answers only "+
			"localhost, loopback addresses and the names of --http-allowed-hosts")
	}
	return nil
}

// allowedOrigin reports whether a request's single Origin may call: one
// the operator listed, or the request's own origin (a page the listener
// itself serves under the name it was addressed by). A same-origin page
// still meets the Host check of a loopback listener, so a DNS-rebinding
// page, whose origin is its own name, stays refused there.
func (g guard) allowedOrigin(r *http.Request, origin string) bool {
	o := normalizeOrigin(origin)
	return g.origins[o] || (r.Host != "" && o == ownOrigin(r))
}

// ownOrigin is the origin of the URL a request was sent to:
// scheme://host[:port] as the Host header gives it, with the scheme of
// the connection and without the scheme's default port, as browsers
// write Origin.
func ownOrigin(r *http.Request) string {
	scheme, port := "http", ":80"
	if r.TLS != nil {
		scheme, port = "https", ":443"
	}
	return scheme + "://" + strings.TrimSuffix(normalizeOrigin(r.Host), port)
}

func forbidden(reason, details string) *refusal {
	return &refusal{status: http.StatusForbidden, reason: reason,
		err: transport.AppError(dispatch.StringPermissionDenied, "Request refused.").WithDetails(details)}
}

func jsonContentType(values []string) bool {
	if len(values) != 1 {
		return false
	}
	mt, _, err := mime.ParseMediaType(values[0])
	return err == nil && mt == "application/json"
}

func normalizeOrigin(o string) string {
	return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(o), "/"))
}

func normalizeHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// arrivedOnLoopback reports whether the request reached a loopback address
// of this machine, which only a local client (or a browser tricked by DNS
// rebinding) can do.
func arrivedOnLoopback(r *http.Request) bool {
	la, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	ta, ok := la.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// loopbackHost reports whether a Host header names this machine's
// loopback: localhost (and its subdomains, which resolvers must keep on
// loopback), a loopback address, or an operator-allowed name. A request
// without Host (HTTP/1.0) cannot come from a browser and passes.
func (g guard) loopbackHost(hostport string) bool {
	if hostport == "" {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = normalizeHost(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || g.hosts[host] {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// quoteName quotes a name a client sent, cut short, for an error's details.
func quoteName(name string) string {
	if len(name) > 128 {
		name = name[:128] + "…"
	}
	return string(transport.AppendString(nil, name))
}
