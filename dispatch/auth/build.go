package auth

import (
	"fmt"
	"sort"
)

// crossCheck reports what no single identity shows: duplicate names, and
// a token or certificate matcher given to two identities (or twice to
// one), which would make authentication ambiguous.
func (p *parser) crossCheck(specs []*identitySpec) {
	names := map[string]*identitySpec{}
	tokens := map[digest]owner{}
	certs := map[certKey]owner{}
	for _, s := range specs {
		if s.name != "" {
			if first, dup := names[s.name]; dup {
				p.fail(s.nameNode, join(s.path, "name"), "name %q already used at line %d", s.name, first.nameNode.Line)
			} else {
				names[s.name] = s
			}
		}
		for _, t := range s.tokens {
			if first, dup := tokens[t.v]; dup {
				p.fail(t.node, t.path, "this token hash is already listed at line %d%s", first.line, first.of(s))
			} else {
				tokens[t.v] = owner{s, t.node.Line}
			}
		}
		for _, c := range s.certs {
			if first, dup := certs[c.v]; dup {
				p.fail(c.node, c.path, "%s %s is already listed at line %d%s", c.v.kind, quote(c.v.value), first.line, first.of(s))
			} else {
				certs[c.v] = owner{s, c.node.Line}
			}
		}
	}
}

// owner locates the first occurrence of a credential.
type owner struct {
	spec *identitySpec
	line int
}

func (o owner) of(cur *identitySpec) string {
	if o.spec == cur || o.spec.name == "" {
		return ""
	}
	return fmt.Sprintf(" (identity %q)", o.spec.name)
}

// build turns validated specs into a Policy; it runs only when there are
// no problems.
func (p *parser) build(specs []*identitySpec) *Policy {
	pol := &Policy{
		byName:   make(map[string]*Identity, len(specs)),
		tokens:   map[digest]*Identity{},
		certs:    map[certKey]*Identity{},
		warnings: p.warnings,
	}
	for _, s := range specs {
		g := &grant{
			name: s.name, class: s.class, limits: s.limits,
			allMethods: s.methods.all, methods: s.methods.set,
			allNamespaces: s.namespaces.all, namespaces: s.namespaces.set,
			network: s.network, runCode: s.runCodeNetwork,
			entry: entryDigest(s.node),
		}
		pol.byName[g.name] = &Identity{g: g, snap: pol}
		pol.names = append(pol.names, g.name)
		for _, t := range s.tokens {
			pol.tokens[t.v] = &Identity{g: g, snap: pol, cred: credential{kind: credToken, digest: t.v}}
		}
		for _, c := range s.certs {
			pol.certs[c.v] = &Identity{g: g, snap: pol, cred: credential{kind: credCert, cert: c.v}}
		}
	}
	pol.nTokens = len(pol.tokens)
	sort.Strings(pol.names)
	return pol
}
