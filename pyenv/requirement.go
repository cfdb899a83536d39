package pyenv

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Bounds of what a requirement list may hold: the lists are written by
// skill authors and operators, and every one ends up on pip's command line.
const (
	MaxRequirements     = 256
	maxRequirementBytes = 4096
)

// Requirement is one parsed PEP 508 requirement, in the canonical form its
// content address uses: Name as written (pip reports it so), the rest
// normalized so that spellings of one requirement compare equal.
type Requirement struct {
	// Name is the distribution name as written; Key() is its PEP 503 form.
	Name string `json:"name"`
	// Extras are PEP 503-normalized and sorted.
	Extras []string `json:"extras,omitempty"`
	// Specifier is the version specifier: clauses without spaces, sorted,
	// joined by commas ("<3,>=2.8"); empty means any version.
	Specifier string `json:"specifier,omitempty"`
	// Marker is the environment marker with its whitespace collapsed.
	Marker string `json:"marker,omitempty"`
	// Hashes are the accepted archive hashes ("sha256:<hex>"), sorted.
	// A list in which any requirement has hashes is installed with pip's
	// --require-hashes: every requirement and dependency then needs one.
	Hashes []string `json:"hashes,omitempty"`
}

// Key is the PEP 503 normalized name: what tells two requirements of one
// distribution apart from two distributions.
func (r Requirement) Key() string { return NormalizeName(r.Name) }

// String renders the requirement as a PEP 508 string (without hashes),
// with the normalized name.
func (r Requirement) String() string {
	var b strings.Builder
	b.WriteString(r.Key())
	if len(r.Extras) > 0 {
		b.WriteString("[" + strings.Join(r.Extras, ",") + "]")
	}
	b.WriteString(r.Specifier)
	if r.Marker != "" {
		b.WriteString("; " + r.Marker)
	}
	return b.String()
}

// line is the requirement as a requirements-file line pip reads.
func (r Requirement) line() string {
	s := r.String()
	for _, h := range r.Hashes {
		s += " --hash=" + h
	}
	return s
}

var nameSeparators = regexp.MustCompile(`[-_.]+`)

// NormalizeName is PEP 503's normalization: lowercase, every run of -, _
// and . one "-". "Python_DateUtil" and "python-dateutil" are one
// distribution.
func NormalizeName(name string) string {
	return nameSeparators.ReplaceAllString(strings.ToLower(name), "-")
}

var (
	namePattern   = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?`)
	clausePattern = regexp.MustCompile(`^(===|~=|==|!=|<=|>=|<|>)\s*(\S+?)\s*$`)
	// versionPattern is permissive on purpose (local versions, epochs,
	// pre-releases); pip checks the rest. A trailing .* only with == and !=.
	versionPattern   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+!-]*(\.\*)?$`)
	arbitraryVersion = regexp.MustCompile(`^[^\s,;()\[\]'"]+$`)
)

// ParseRequirement parses one PEP 508 requirement: a name, optional
// extras, an optional version specifier and an optional marker. URL
// requirements (name @ url) and paths are refused: packages come only from
// the gateway's sources, by name.
func ParseRequirement(s string) (Requirement, error) {
	r, err := parseRequirement(s)
	if err != nil {
		return Requirement{}, fmt.Errorf("%q: %w", clip(s), err)
	}
	return r, nil
}

func parseRequirement(s string) (Requirement, error) {
	if len(s) > maxRequirementBytes {
		return Requirement{}, invalid("longer than %d bytes", maxRequirementBytes)
	}
	if i := strings.IndexFunc(s, isControl); i >= 0 {
		return Requirement{}, invalid("control character at byte %d", i)
	}
	rest := strings.TrimSpace(s)
	if rest == "" {
		return Requirement{}, invalid("empty requirement")
	}
	if looksLikePath(rest) {
		return Requirement{}, invalid("a path or archive file, not a requirement: list the wheel's folder with --python-find-links and require the distribution by name")
	}
	name := namePattern.FindString(rest)
	if name == "" {
		return Requirement{}, invalid("must start with a distribution name (letters, digits, and ., _ or - inside)")
	}
	r := Requirement{Name: name}
	rest = strings.TrimLeft(rest[len(name):], " \t")
	var err error
	if r.Extras, rest, err = parseExtras(rest); err != nil {
		return Requirement{}, err
	}
	if strings.HasPrefix(rest, "@") {
		return Requirement{}, invalid("URL requirements (name @ url) are not accepted: put the wheel in a --python-find-links wheelhouse and require %s by name", name)
	}
	spec, marker, hasMarker := strings.Cut(rest, ";")
	if r.Specifier, err = parseSpecifier(spec); err != nil {
		return Requirement{}, err
	}
	if hasMarker {
		if r.Marker, err = parseMarker(marker); err != nil {
			return Requirement{}, err
		}
	}
	return r, nil
}

func isControl(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }

// looksLikePath spots what pip would take for a local file or folder.
func looksLikePath(s string) bool {
	first, _, _ := strings.Cut(s, ";")
	first = strings.TrimSpace(first)
	if strings.Contains(first, "@") {
		return false // name @ url: refused with its own reason
	}
	if strings.ContainsAny(first, `/\`) {
		return true
	}
	for _, ext := range []string{".whl", ".tar.gz", ".zip", ".tgz", ".tar.bz2"} {
		if strings.HasSuffix(strings.ToLower(first), ext) {
			return true
		}
	}
	return first == "." || first == ".."
}

func parseExtras(rest string) ([]string, string, error) {
	if !strings.HasPrefix(rest, "[") {
		return nil, rest, nil
	}
	end := strings.IndexByte(rest, ']')
	if end < 0 {
		return nil, "", invalid("extras list has no closing ]")
	}
	var extras []string
	for e := range strings.SplitSeq(rest[1:end], ",") {
		e = strings.TrimSpace(e)
		if e == "" && strings.TrimSpace(rest[1:end]) == "" {
			break
		}
		if namePattern.FindString(e) != e || e == "" {
			return nil, "", invalid("extra %q is not a name", clip(e))
		}
		if n := NormalizeName(e); !slices.Contains(extras, n) {
			extras = append(extras, n)
		}
	}
	slices.Sort(extras)
	return extras, strings.TrimLeft(rest[end+1:], " \t"), nil
}

// parseSpecifier normalizes "(>= 2.8, <3)" or ">=2.8,<3" into "<3,>=2.8".
func parseSpecifier(spec string) (string, error) {
	spec = strings.TrimSpace(spec)
	if strings.HasPrefix(spec, "(") {
		if !strings.HasSuffix(spec, ")") {
			return "", invalid("version specifier opens ( without closing it")
		}
		spec = strings.TrimSpace(spec[1 : len(spec)-1])
	}
	if spec == "" {
		return "", nil
	}
	var clauses []string
	for c := range strings.SplitSeq(spec, ",") {
		m := clausePattern.FindStringSubmatch(strings.TrimSpace(c))
		if m == nil {
			return "", invalid("version clause %q is not an operator (==, !=, <=, >=, <, >, ~=, ===) and a version", clip(strings.TrimSpace(c)))
		}
		op, v := m[1], m[2]
		ok := versionPattern.MatchString(v) && (!strings.HasSuffix(v, ".*") || op == "==" || op == "!=")
		if op == "===" {
			ok = arbitraryVersion.MatchString(v)
		}
		if !ok {
			return "", invalid("%q is not a version for %s", clip(v), op)
		}
		if !slices.Contains(clauses, op+v) {
			clauses = append(clauses, op+v)
		}
	}
	slices.Sort(clauses)
	return strings.Join(clauses, ","), nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrInvalidRequirement)
}

// clip keeps error messages about hostile input short.
func clip(s string) string {
	const n = 80
	if len(s) <= n {
		return s
	}
	for i := n; i > 0; i-- {
		if s[i]&0xC0 != 0x80 {
			return s[:i] + "…"
		}
	}
	return ""
}

// ParseRequirements parses a list of PEP 508 strings (skill.toml's
// [runtime] requirements). A distribution required twice is an error: pip
// refuses it too, and the author means one of them.
func ParseRequirements(list []string) ([]Requirement, error) {
	if len(list) > MaxRequirements {
		return nil, invalid("%d requirements, at most %d", len(list), MaxRequirements)
	}
	out := make([]Requirement, 0, len(list))
	for i, s := range list {
		r, err := ParseRequirement(s)
		if err != nil {
			return nil, fmt.Errorf("requirement %d: %w", i, err)
		}
		if j := indexOf(out, r.Key()); j >= 0 {
			return nil, fmt.Errorf("requirement %d: %s is already required by requirement %d: %w", i, r.Key(), j, ErrInvalidRequirement)
		}
		out = append(out, r)
	}
	return out, nil
}

func indexOf(list []Requirement, key string) int {
	return slices.IndexFunc(list, func(r Requirement) bool { return r.Key() == key })
}

// Canonical is the list in the order its content address uses: by
// normalized name. The result is a new slice.
func Canonical(list []Requirement) []Requirement {
	out := slices.Clone(list)
	slices.SortFunc(out, func(a, b Requirement) int { return strings.Compare(a.Key(), b.Key()) })
	return out
}
