package auth

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash"
	"io/fs"
	"sort"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// failClosed applies a rejected version of the file. A token or matcher
// that the operator deleted must stop working even when the edit left the
// file invalid, and an invalid file cannot say what it grants. So each
// identity of the version in force is kept only if the rejected file holds
// exactly one entry of that name that says the same as before (entries
// are compared as YAML values: comments, quoting, flow or block style do
// not matter). Every other identity is disabled until a valid version
// loads: its tokens answer as revoked and open connections lose it at
// their next call. A file that is no YAML at all, or is gone, keeps no
// identity. A file that cannot be read for another reason (permissions,
// descriptors) says nothing about its content and changes nothing.
func (s *Store) failClosed(data []byte, readErr error) {
	if readErr != nil && !errors.Is(readErr, fs.ErrNotExist) {
		return
	}
	var entries map[string]digest
	if readErr == nil {
		entries = entriesOf(data)
	}
	cur := s.cur.Load()
	next, disabled := cur.restrict(func(g *grant) bool {
		d, ok := entries[g.name]
		return ok && d == g.entry
	})
	if len(disabled) == 0 {
		return
	}
	// next.sum stays zero, matching no file: every later reload reads the
	// file again, so the old valid version, saved again, loads in full.
	carryRevoked(next, cur)
	s.cur.Store(next)
	s.changed.broadcast()
	s.opts.Logger.Error().Str("file", s.path).Strs("disabled", disabled).Strs("kept", next.names).
		Msg("auth file rejected: identities it changed or removed are disabled until a valid version loads")
}

// restrict returns a copy of p with only the identities keep accepts, and
// the names of the others, sorted.
func (p *Policy) restrict(keep func(*grant) bool) (*Policy, []string) {
	next := &Policy{
		byName: make(map[string]*Identity, len(p.byName)),
		tokens: make(map[digest]*Identity, len(p.tokens)),
		certs:  make(map[certKey]*Identity, len(p.certs)),
	}
	var disabled []string
	for name, id := range p.byName {
		if !keep(id.g) {
			disabled = append(disabled, name)
			continue
		}
		next.byName[name] = &Identity{g: id.g, snap: next}
		next.names = append(next.names, name)
	}
	for d, id := range p.tokens {
		if keep(id.g) {
			next.tokens[d] = &Identity{g: id.g, snap: next, cred: id.cred}
		}
	}
	for k, id := range p.certs {
		if keep(id.g) {
			next.certs[k] = &Identity{g: id.g, snap: next, cred: id.cred}
		}
	}
	next.nTokens = len(next.tokens)
	sort.Strings(next.names)
	sort.Strings(disabled)
	return next, disabled
}

// entriesOf fingerprints the identity entries of a rejected file by name.
// Names given twice and entries without a readable name are left out, and
// a file that is no YAML mapping with one identities list yields nothing.
func entriesOf(data []byte) map[string]digest {
	if len(data) > MaxFileSize {
		return nil
	}
	root, prob := decodeDocument(data)
	if prob != nil || root.Kind != yaml.MappingNode {
		return nil
	}
	list := uniqueValue(root, "identities")
	if list == nil || list.Kind != yaml.SequenceNode {
		return nil
	}
	out := map[string]digest{}
	twice := map[string]bool{}
	for _, item := range list.Content {
		name := uniqueValue(item, "name")
		if name == nil || name.Kind != yaml.ScalarNode {
			continue
		}
		if _, seen := out[name.Value]; seen {
			twice[name.Value] = true
		}
		out[name.Value] = entryDigest(item)
	}
	for n := range twice {
		delete(out, n)
	}
	return out
}

// uniqueValue returns the value of key in mapping n, or nil when n is no
// mapping or has the key other than once.
func uniqueValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	var v *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Value == key {
			if v != nil {
				return nil
			}
			v = n.Content[i+1]
		}
	}
	return v
}

// entryDigest fingerprints a YAML node as a value: the kind, resolved tag
// and text of every node, in order. Comments, styles and positions are
// left out; aliases are not followed (the format refuses them).
func entryDigest(n *yaml.Node) digest {
	h := sha256.New()
	writeNode(h, n)
	var d digest
	h.Sum(d[:0])
	return d
}

func writeNode(h hash.Hash, n *yaml.Node) {
	var buf [binary.MaxVarintLen64]byte
	put := func(s string) {
		h.Write(binary.AppendUvarint(buf[:0], uint64(len(s))))
		h.Write([]byte(s))
	}
	put(strconv.Itoa(int(n.Kind)))
	put(n.ShortTag())
	put(n.Value)
	put(strconv.Itoa(len(n.Content)))
	for _, c := range n.Content {
		writeNode(h, c)
	}
}
