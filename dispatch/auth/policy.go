package auth

import (
	"crypto/tls"
	"crypto/x509"
	"sort"
	"strconv"
	"strings"
)

// certKind is the certificate attribute a matcher compares.
type certKind uint8

const (
	certCN  certKind = iota + 1 // subject common name
	certDNS                     // DNS subject alternative name
	certURI                     // URI subject alternative name
)

func (k certKind) String() string {
	switch k {
	case certCN:
		return "common_name"
	case certDNS:
		return "dns_name"
	case certURI:
		return "uri"
	}
	return "unknown"
}

// certKey is one certificate matcher of the auth file, normalized.
type certKey struct {
	kind  certKind
	value string
}

// Policy is one parsed version of the auth file. It is immutable: a reload
// builds a new one. Every Identity it hands out points back to it, which is
// how Store.Revalidate tells a current identity from a stale one.
type Policy struct {
	byName   map[string]*Identity  // looked up by name
	names    []string              // sorted
	tokens   map[digest]*Identity  // by token hash; Identity.cred records the hash
	certs    map[certKey]*Identity // by matcher; Identity.cred records the matcher
	revoked  map[digest]struct{}   // tokens of earlier versions no longer listed (set by Store)
	warnings []Problem
	sum      digest // SHA-256 of the file's bytes
	nTokens  int
}

// Identity returns the identity of that name, or nil.
func (p *Policy) Identity(name string) *Identity { return p.byName[name] }

// Names returns the identities' names, sorted.
func (p *Policy) Names() []string { return append([]string(nil), p.names...) }

// Warnings returns what is valid but probably not meant (an identity nobody
// can authenticate as, an empty file, ...).
func (p *Policy) Warnings() []Problem { return append([]Problem(nil), p.warnings...) }

// Tokens returns the number of token hashes in the file.
func (p *Policy) Tokens() int { return p.nTokens }

// Certificates returns the number of certificate matchers in the file.
func (p *Policy) Certificates() int { return len(p.certs) }

// authenticateToken looks the token's hash up in a map rather than
// comparing it with subtle.ConstantTimeCompare against every stored hash.
// Both are safe: what the lookup's timing can depend on is the SHA-256 of
// the presented token, which the client already knows, and not the stored
// secret; steering a hash towards a stored one would take a preimage
// attack on SHA-256. Timing attacks on token comparison need a comparison
// of the secret itself, which never happens here. The map keeps the cost
// independent of the number of tokens.
func (p *Policy) authenticateToken(token string) (*Identity, error) {
	if token == "" {
		return nil, failMissing
	}
	if len(token) > MaxTokenLen {
		return nil, failInvalid
	}
	d := hashPresented(token)
	if id := p.tokens[d]; id != nil {
		return id, nil
	}
	if _, ok := p.revoked[d]; ok {
		return nil, failRevoked
	}
	return nil, failInvalid
}

// authenticateCert finds the identity of a verified client certificate. An
// unverified certificate (a TLS configuration that requests but does not
// verify client certificates) never authenticates.
func (p *Policy) authenticateCert(cs *tls.ConnectionState) (*Identity, error) {
	if cs == nil || len(cs.PeerCertificates) == 0 {
		return nil, failMissing
	}
	if len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return nil, failCertUnverified
	}
	m := certMatch{p: p}
	m.leaf(cs.VerifiedChains[0][0])
	switch {
	case m.ambiguous:
		return nil, failCertAmbiguous
	case m.found == nil:
		return nil, failCertUnknown
	}
	return m.found, nil
}

// certMatch collects the identities a certificate's attributes match. URI
// SANs are tried first, then DNS SANs, then the common name, so that the
// most specific matcher is the one recorded for Revalidate.
type certMatch struct {
	p         *Policy
	found     *Identity
	ambiguous bool
}

func (m *certMatch) leaf(c *x509.Certificate) {
	for _, u := range c.URIs {
		m.try(certKey{certURI, u.String()})
	}
	for _, n := range c.DNSNames {
		m.try(certKey{certDNS, normalizeDNS(n)})
	}
	if c.Subject.CommonName != "" {
		m.try(certKey{certCN, c.Subject.CommonName})
	}
}

func (m *certMatch) try(k certKey) {
	id := m.p.certs[k]
	switch {
	case id == nil:
	case m.found == nil:
		m.found = id
	case m.found.g != id.g:
		m.ambiguous = true
	}
}

// revalidate finds the current version of an identity from an older
// policy: the same credential must still map to an identity of the same
// name.
func (p *Policy) revalidate(id *Identity) (*Identity, error) {
	var cur *Identity
	switch id.cred.kind {
	case credToken:
		cur = p.tokens[id.cred.digest]
	case credCert:
		cur = p.certs[id.cred.cert]
	case credNone:
		cur = p.byName[id.g.name]
	}
	if cur == nil || cur.g.name != id.g.name {
		return nil, failRevoked
	}
	return cur, nil
}

func normalizeDNS(s string) string {
	return strings.ToLower(strings.TrimSuffix(s, "."))
}

func setList(all bool, set map[string]struct{}) []string {
	if all {
		return []string{Wildcard}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// quote quotes a client-supplied string for an error message, cut to a
// length that keeps messages small.
func quote(s string) string {
	const maxLen = 64
	if len(s) > maxLen {
		s = s[:maxLen] + "..."
	}
	return strconv.Quote(s)
}
