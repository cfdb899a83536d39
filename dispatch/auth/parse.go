package auth

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxFileSize bounds the auth file.
const MaxFileSize = 4 << 20

// Problem is one thing wrong (or suspicious) in the auth file.
type Problem struct {
	Line, Column int    // 1-based; 0 when unknown
	Path         string // e.g. "identities[2].tokens[0]"; empty for the whole file
	Message      string
}

func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "%d:%d: ", p.Line, p.Column)
	}
	if p.Path != "" {
		b.WriteString(p.Path + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// FileError lists every problem of an invalid auth file. It wraps
// ErrInvalidFile.
type FileError struct {
	File     string // the file's path; may be empty
	Problems []Problem
}

func (e *FileError) Error() string {
	var b strings.Builder
	name := e.File
	if name == "" {
		name = "auth file"
	}
	fmt.Fprintf(&b, "%s: %d problem(s):", name, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		if e.File != "" && p.Line > 0 {
			b.WriteString(e.File + ":")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Unwrap returns ErrInvalidFile.
func (e *FileError) Unwrap() error { return ErrInvalidFile }

// ParseOptions tune Parse.
type ParseOptions struct {
	// Methods are the canonical method names the file may list; empty
	// means DefaultMethods(). Any other name is an error, so that a typo
	// does not silently deny a method.
	Methods []string
}

// Parse parses and validates an auth file. On failure the error is a
// *FileError holding every problem found, each with its line, column and
// path.
func Parse(data []byte, opts ParseOptions) (*Policy, error) {
	if len(data) > MaxFileSize {
		return nil, &FileError{Problems: []Problem{{Message: fmt.Sprintf("file is larger than %d bytes", MaxFileSize)}}}
	}
	root, prob := decodeDocument(data)
	if prob != nil {
		return nil, &FileError{Problems: []Problem{*prob}}
	}
	p := newParser(opts)
	if p.noAliases(root) {
		var specs []*identitySpec
		p.fields(root, "", []field{
			{name: "version", parse: p.version},
			{name: "identities", required: true, parse: func(v *yaml.Node, path string) { specs = p.identities(v, path) }},
		})
		p.crossCheck(specs)
		if len(p.problems) == 0 {
			pol := p.build(specs)
			pol.sum = hashBytes(data)
			return pol, nil
		}
	}
	return nil, &FileError{Problems: p.problems}
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// decodeDocument decodes exactly one YAML document and returns its root
// node.
func decodeDocument(data []byte) (*yaml.Node, *Problem) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Problem{Message: "the file is empty; to refuse every client write \"identities: []\""}
		}
		return nil, yamlProblem(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, yamlProblem(err)
		}
		return nil, &Problem{Line: extra.Line, Column: extra.Column, Message: "more than one YAML document; put everything in one"}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &Problem{Message: "not a YAML document"}
	}
	return doc.Content[0], nil
}

func yamlProblem(err error) *Problem {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Problem{Line: line, Column: 1, Message: "YAML syntax: " + m[2]}
	}
	return &Problem{Message: "YAML syntax: " + strings.TrimPrefix(msg, "yaml: ")}
}

// parser walks the YAML node tree, collecting problems instead of stopping
// at the first.
type parser struct {
	known    map[string]struct{}
	problems []Problem
	warnings []Problem
}

func newParser(opts ParseOptions) *parser {
	methods := opts.Methods
	if len(methods) == 0 {
		methods = DefaultMethods()
	}
	p := &parser{known: make(map[string]struct{}, len(methods))}
	for _, m := range methods {
		p.known[m] = struct{}{}
	}
	return p
}

func (p *parser) fail(n *yaml.Node, path, format string, args ...any) {
	p.problems = append(p.problems, problemAt(n, path, fmt.Sprintf(format, args...)))
}

func (p *parser) warn(n *yaml.Node, path, format string, args ...any) {
	p.warnings = append(p.warnings, problemAt(n, path, fmt.Sprintf(format, args...)))
}

func problemAt(n *yaml.Node, path, msg string) Problem {
	pr := Problem{Path: path, Message: msg}
	if n != nil {
		pr.Line, pr.Column = n.Line, n.Column
	}
	return pr
}

// noAliases reports anchors and aliases, which the format does not use:
// refusing them keeps the walk linear in the file's size.
func (p *parser) noAliases(n *yaml.Node) bool {
	ok := true
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.AliasNode || n.Anchor != "" {
			p.fail(n, "", "YAML anchors and aliases are not supported; write each value out")
			ok = false
			return
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	return ok
}

// field is one key of a mapping and the function that parses its value.
type field struct {
	name     string
	required bool
	parse    func(v *yaml.Node, path string)
}

// fields parses a mapping: each known key once, unknown keys and missing
// required keys reported. It returns false if n is no mapping.
func (p *parser) fields(n *yaml.Node, path string, fs []field) bool {
	if n.Kind != yaml.MappingNode {
		p.fail(n, path, "must be a mapping of keys to values, not %s", kindName(n))
		return false
	}
	seen := make(map[string]bool, len(fs))
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		f := findField(fs, k)
		switch {
		case f == nil:
			p.fail(k, path, "unknown key %s; known keys: %s", quote(k.Value), fieldNames(fs))
		case seen[f.name]:
			p.fail(k, path, "key %q given twice", f.name)
		default:
			seen[f.name] = true
			f.parse(v, join(path, f.name))
		}
	}
	for _, f := range fs {
		if f.required && !seen[f.name] {
			p.fail(n, path, "missing required key %q", f.name)
		}
	}
	return true
}

func findField(fs []field, k *yaml.Node) *field {
	if k.Kind != yaml.ScalarNode {
		return nil
	}
	for i := range fs {
		if fs[i].name == k.Value {
			return &fs[i]
		}
	}
	return nil
}

func fieldNames(fs []field) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	return strings.Join(names, ", ")
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "empty"
		}
		return "a single value"
	}
	return "an alias"
}

// str returns a scalar's text; ok is false (and a problem recorded) for
// anything else, null included.
func (p *parser) str(n *yaml.Node, path string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.fail(n, path, "must be a string, not %s", kindName(n))
		return "", false
	}
	return n.Value, true
}

// list returns a sequence's items. A key written with no value (YAML
// null) is an empty list: deleting the last item of a block list leaves
// exactly that, and it must mean "none", never an error that keeps the
// deleted items alive.
func (p *parser) list(n *yaml.Node, path, example string) ([]*yaml.Node, bool) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, true
	}
	if n.Kind != yaml.SequenceNode {
		p.fail(n, path, "must be a list (for example %s), not %s", example, kindName(n))
		return nil, false
	}
	return n.Content, true
}

func (p *parser) version(v *yaml.Node, path string) {
	var n int
	if v.Kind != yaml.ScalarNode || v.Tag != "!!int" || v.Decode(&n) != nil || n != 1 {
		p.fail(v, path, "must be 1, the only version of this format")
	}
}
