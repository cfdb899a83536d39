package auth

import (
	"math"
	"net/url"
	"regexp"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/skillgate/skillgate/egress/hostpattern"
)

// Bounds of the file's values.
const (
	maxNameLen = 64
	maxLimit   = 1_000_000
	maxBytes   = 1 << 50 // a petabyte: past any disk, short of overflow
)

var (
	nameRE      = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	namespaceRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	dnsRE       = regexp.MustCompile(`^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$`)
)

// identitySpec is one identity as written, with the nodes that locate its
// parts for cross-identity checks.
type identitySpec struct {
	node       *yaml.Node
	path       string
	name       string
	nameNode   *yaml.Node
	class      Class
	tokens     []located[digest]
	certs      []located[certKey]
	methods    stringSet
	namespaces stringSet
	limits     Limits
	// network narrows skills' network (nil: not given); runCodeNetwork is
	// what run_code may reach (none when empty).
	network        []string
	runCodeNetwork []string
}

type located[T any] struct {
	v    T
	node *yaml.Node
	path string
}

type stringSet struct {
	all bool
	set map[string]struct{}
}

func (p *parser) identities(v *yaml.Node, path string) []*identitySpec {
	items, ok := p.list(v, path, "[{name: ..., ...}]")
	if !ok {
		return nil
	}
	if len(items) == 0 {
		p.warn(v, path, "no identities: every client will be refused")
	}
	specs := make([]*identitySpec, 0, len(items))
	for i, n := range items {
		specs = append(specs, p.identity(n, index(path, i)))
	}
	return specs
}

func (p *parser) identity(n *yaml.Node, path string) *identitySpec {
	s := &identitySpec{node: n, path: path}
	p.fields(n, path, []field{
		{name: "name", required: true, parse: func(v *yaml.Node, path string) { s.name, s.nameNode = p.name(v, path), v }},
		{name: "class", required: true, parse: func(v *yaml.Node, path string) { s.class = p.class(v, path) }},
		{name: "tokens", parse: func(v *yaml.Node, path string) { s.tokens = p.tokens(v, path) }},
		{name: "certificates", parse: func(v *yaml.Node, path string) { s.certs = p.certificates(v, path) }},
		{name: "methods", required: true, parse: func(v *yaml.Node, path string) { s.methods = p.methods(v, path) }},
		{name: "namespaces", required: true, parse: func(v *yaml.Node, path string) { s.namespaces = p.namespaces(v, path) }},
		{name: "limits", parse: func(v *yaml.Node, path string) { s.limits = p.limits(v, path) }},
		{name: "network", parse: func(v *yaml.Node, path string) { s.network = p.network(v, path) }},
		{name: "run_code_network", parse: func(v *yaml.Node, path string) { s.runCodeNetwork = p.network(v, path) }},
	})
	if n.Kind == yaml.MappingNode && len(s.tokens) == 0 && len(s.certs) == 0 {
		p.warn(n, path, "no tokens or certificates: nobody can authenticate as this identity")
	}
	return s
}

func (p *parser) name(v *yaml.Node, path string) string {
	s, ok := p.str(v, path)
	switch {
	case !ok:
	case len(s) > maxNameLen || !nameRE.MatchString(s):
		p.fail(v, path, "%s is not a valid name: lowercase letters, digits, '.', '_' and '-', starting with a letter or digit, at most %d characters", quote(s), maxNameLen)
	case s == AnonymousName:
		p.fail(v, path, "the name %q is reserved for the identity of a gateway without auth file", AnonymousName)
	default:
		return s
	}
	return ""
}

func (p *parser) class(v *yaml.Node, path string) Class {
	s, ok := p.str(v, path)
	if ok && !fileClass(s) {
		p.fail(v, path, "%s is not a class; use one of agent, device, dashboard, service, admin", quote(s))
		return ""
	}
	return Class(s)
}

func (p *parser) tokens(v *yaml.Node, path string) []located[digest] {
	items, _ := p.list(v, path, `["sha256:<64 hex digits>"]`)
	var out []located[digest]
	for i, n := range items {
		ip := index(path, i)
		s, ok := p.str(n, ip)
		if !ok {
			continue
		}
		d, ok := parseHash(s)
		switch {
		case ok:
			out = append(out, located[digest]{d, n, ip})
		case strings.HasPrefix(s, TokenPrefix):
			// The value is never echoed: it may be a live secret.
			p.fail(n, ip, "this looks like a plaintext token; list its hash instead (\"sha256:\" and the hex SHA-256 of the token, as \"skillgate token\" prints it) and rotate the token: it has been written to disk")
		default:
			p.fail(n, ip, "not a token hash; write \"sha256:\" followed by the 64 hex digits of the token's SHA-256")
		}
	}
	return out
}

func (p *parser) certificates(v *yaml.Node, path string) []located[certKey] {
	items, _ := p.list(v, path, "[{common_name: device-42}]")
	var out []located[certKey]
	for i, n := range items {
		ip := index(path, i)
		var k certKey
		p.fields(n, ip, []field{
			{name: "common_name", parse: func(v *yaml.Node, path string) { k = p.certValue(k, certCN, v, path) }},
			{name: "dns_name", parse: func(v *yaml.Node, path string) { k = p.certValue(k, certDNS, v, path) }},
			{name: "uri", parse: func(v *yaml.Node, path string) { k = p.certValue(k, certURI, v, path) }},
		})
		if n.Kind == yaml.MappingNode && len(n.Content) == 0 {
			p.fail(n, ip, "empty matcher; give one of common_name, dns_name, uri")
		}
		if k.kind != 0 {
			out = append(out, located[certKey]{k, n, ip})
		}
	}
	return out
}

// certValue validates one matcher value; a matcher holds exactly one.
func (p *parser) certValue(prev certKey, kind certKind, v *yaml.Node, path string) certKey {
	if prev.kind != 0 {
		p.fail(v, path, "a matcher compares one attribute; write %s and %s as two list entries", prev.kind, kind)
		return prev
	}
	s, ok := p.str(v, path)
	if !ok {
		return prev
	}
	if msg := checkCertValue(kind, s); msg != "" {
		p.fail(v, path, "%s", msg)
		return prev
	}
	if kind == certDNS {
		s = normalizeDNS(s)
	}
	return certKey{kind, s}
}

func checkCertValue(kind certKind, s string) string {
	switch kind {
	case certCN:
		if s == "" || len(s) > 64 || strings.IndexFunc(s, unicode.IsControl) >= 0 {
			return "common_name must be 1 to 64 printable characters"
		}
	case certDNS:
		n := normalizeDNS(s)
		if strings.Contains(s, "*") {
			return "wildcards are not supported; list each DNS name"
		}
		if len(n) == 0 || len(n) > 253 || !dnsRE.MatchString(n) {
			return quote(s) + " is not a DNS name"
		}
	case certURI:
		u, err := url.Parse(s)
		if err != nil || u.Scheme == "" || len(s) > 2048 || strings.ContainsAny(s, " \t\r\n") {
			return quote(s) + " is not an absolute URI such as spiffe://example.com/pos"
		}
	}
	return ""
}

func (p *parser) methods(v *yaml.Node, path string) stringSet {
	return p.stringSet(v, path, `["list_skills", "describe_skill"] or ["*"]`, func(s string) string {
		if _, ok := p.known[s]; ok {
			return ""
		}
		if c := snake(s); c != s {
			if _, ok := p.known[c]; ok {
				return "use the canonical method name " + quote(c) + ", not " + quote(s)
			}
		}
		return quote(s) + " is not a method of this gateway"
	})
}

func (p *parser) namespaces(v *yaml.Node, path string) stringSet {
	return p.stringSet(v, path, `["acme"] or ["*"]`, func(s string) string {
		if len(s) > maxNameLen || !namespaceRE.MatchString(s) {
			return quote(s) + " is not a namespace: the first segment of a skill name, such as \"acme\" for acme.math.add"
		}
		return ""
	})
}

// stringSet parses a list of unique strings or ["*"]; check returns a
// message for a bad item.
func (p *parser) stringSet(v *yaml.Node, path, example string, check func(string) string) stringSet {
	out := stringSet{set: map[string]struct{}{}}
	items, _ := p.list(v, path, example)
	for i, n := range items {
		ip := index(path, i)
		s, ok := p.str(n, ip)
		switch {
		case !ok:
		case s == Wildcard && len(items) > 1:
			p.fail(n, ip, "%q must be the only entry", Wildcard)
		case s == Wildcard:
			out.all = true
		case hasKey(out.set, s):
			p.fail(n, ip, "%s is listed twice", quote(s))
		default:
			if msg := check(s); msg != "" {
				p.fail(n, ip, "%s", msg)
				continue
			}
			out.set[s] = struct{}{}
		}
	}
	return out
}

func hasKey(m map[string]struct{}, k string) bool {
	_, ok := m[k]
	return ok
}

// snake turns a CamelCase alias into its canonical name (ListSkills ->
// list_skills), for a hint.
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (p *parser) limits(v *yaml.Node, path string) Limits {
	var l Limits
	p.fields(v, path, []field{
		{name: "requests_per_second", parse: func(v *yaml.Node, path string) { l.RequestsPerSecond = p.rate(v, path) }},
		{name: "burst", parse: func(v *yaml.Node, path string) { l.Burst = p.count(v, path) }},
		{name: "concurrent_runs", parse: func(v *yaml.Node, path string) { l.ConcurrentRuns = p.count(v, path) }},
		{name: "max_connections", parse: func(v *yaml.Node, path string) { l.MaxConnections = p.count(v, path) }},
		{name: "blob_store_bytes", parse: func(v *yaml.Node, path string) { l.BlobStoreBytes = p.byteCount(v, path) }},
	})
	switch {
	case l.RequestsPerSecond > 0 && l.Burst == 0:
		// A bucket must hold at least one request; one second's worth is
		// the usual default.
		l.Burst = max(1, int(math.Ceil(l.RequestsPerSecond)))
	case l.RequestsPerSecond == 0 && l.Burst > 0:
		p.warn(v, path, "burst has no effect without requests_per_second")
	}
	return l
}

func (p *parser) rate(v *yaml.Node, path string) float64 {
	var f float64
	if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!float") || v.Decode(&f) != nil ||
		math.IsNaN(f) || f < 0 || f > maxLimit {
		p.fail(v, path, "must be a number from 0 (unlimited) to %d", maxLimit)
		return 0
	}
	return f
}

func (p *parser) count(v *yaml.Node, path string) int {
	var n int
	if v.Kind != yaml.ScalarNode || v.Tag != "!!int" || v.Decode(&n) != nil || n < 0 || n > maxLimit {
		p.fail(v, path, "must be a whole number from 0 (unlimited) to %d", maxLimit)
		return 0
	}
	return n
}

// byteCount parses a size in bytes: a whole number, as YAML writes it
// (1073741824, or 1_073_741_824 for legibility).
func (p *parser) byteCount(v *yaml.Node, path string) int64 {
	var n int64
	if v.Kind != yaml.ScalarNode || v.Tag != "!!int" || v.Decode(&n) != nil || n < 0 || n > maxBytes {
		p.fail(v, path, "must be a whole number of bytes from 0 (unlimited) to %d", int64(maxBytes))
		return 0
	}
	return n
}

// network parses a list of egress patterns (host:port, *.domain:port, "*").
func (p *parser) network(v *yaml.Node, path string) []string {
	items, _ := p.list(v, path, `["api.example.com:443", "*.example.com:443"] or ["*"]`)
	out := []string{}
	for i, n := range items {
		ip := index(path, i)
		s, ok := p.str(n, ip)
		if !ok {
			continue
		}
		if _, err := hostpattern.Parse(s); err != nil {
			p.fail(n, ip, "%s is not a network pattern: write host:port, *.domain:port or \"*\"", quote(s))
			continue
		}
		out = append(out, s)
	}
	return out
}
