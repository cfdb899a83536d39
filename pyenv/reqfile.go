package pyenv

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxRequirementsFileBytes bounds a requirements file.
const MaxRequirementsFileBytes = 1 << 20

var (
	// commentPattern is pip's: # at the start or after whitespace.
	commentPattern = regexp.MustCompile(`(^|\s+)#.*$`)
	hashPattern    = regexp.MustCompile(`^(sha256:[0-9a-f]{64}|sha384:[0-9a-f]{96}|sha512:[0-9a-f]{128})$`)
)

// refusedOptions explains the requirements-file options pip knows that a
// skill's or the base environment's file may not use.
var refusedOptions = map[string]string{
	"-e": "editable installs build from source", "--editable": "editable installs build from source",
	"-r": "nested requirements files are not read", "--requirement": "nested requirements files are not read",
	"-c": "constraints files are not read", "--constraint": "constraints files are not read",
	"-i":                "package sources are the gateway's --python-index-url and --python-find-links",
	"--index-url":       "package sources are the gateway's --python-index-url and --python-find-links",
	"--extra-index-url": "package sources are the gateway's --python-index-url and --python-find-links",
	"-f":                "package sources are the gateway's --python-index-url and --python-find-links",
	"--find-links":      "package sources are the gateway's --python-index-url and --python-find-links",
	"--no-index":        "package sources are the gateway's --python-index-url and --python-find-links",
	"--no-binary":       "environments are built from wheels only", "--only-binary": "environments are built from wheels only",
	"--pre": "ask for a pre-release with its version (==2.0b1)", "--trusted-host": "package sources are the gateway's",
}

// ParseRequirementsFile parses pip's requirements-file format: one
// requirement a line, # comments, \ line continuations, and
// --hash=ALGO:HEX after a requirement (sha256, sha384, sha512). Every other
// option (-e, -r, -c, --index-url, --find-links, ...) is refused with the
// line it is on: the sources are the gateway's, and nothing is built from
// source.
func ParseRequirementsFile(data []byte) ([]Requirement, error) {
	if len(data) > MaxRequirementsFileBytes {
		return nil, invalid("requirements file larger than %d bytes", MaxRequirementsFileBytes)
	}
	if !utf8.Valid(data) {
		return nil, invalid("requirements file is not UTF-8 text")
	}
	var out []Requirement
	lines := logicalLines(string(data))
	for _, l := range lines {
		r, ok, err := parseFileLine(l.text)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", l.no, err)
		}
		if !ok {
			continue
		}
		if len(out) == MaxRequirements {
			return nil, fmt.Errorf("line %d: more than %d requirements: %w", l.no, MaxRequirements, ErrInvalidRequirement)
		}
		if j := indexOf(out, r.Key()); j >= 0 {
			return nil, fmt.Errorf("line %d: %s is required twice: %w", l.no, r.Key(), ErrInvalidRequirement)
		}
		out = append(out, r)
	}
	return out, nil
}

type logicalLine struct {
	no   int // first physical line, from 1
	text string
}

// logicalLines strips comments and joins continued lines, as pip does:
// comments go first, so a \ inside a comment continues nothing.
func logicalLines(s string) []logicalLine {
	var out []logicalLine
	var cur strings.Builder
	start := 0
	for i, raw := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		line := commentPattern.ReplaceAllString(raw, "")
		if cur.Len() == 0 {
			start = i + 1
		}
		if strings.HasSuffix(line, `\`) {
			cur.WriteString(strings.TrimSuffix(line, `\`) + " ")
			continue
		}
		cur.WriteString(line)
		out = append(out, logicalLine{no: start, text: cur.String()})
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, logicalLine{no: start, text: cur.String()})
	}
	return out
}

// parseFileLine parses one logical line; ok is false for a blank one.
func parseFileLine(line string) (Requirement, bool, error) {
	line = strings.TrimSpace(line)
	if line == "" {
		return Requirement{}, false, nil
	}
	if strings.HasPrefix(line, "-") {
		return Requirement{}, false, refusedOption(line)
	}
	req, opts := splitOptions(line)
	r, err := ParseRequirement(req)
	if err != nil {
		return Requirement{}, false, err
	}
	if r.Hashes, err = parseHashes(opts); err != nil {
		return Requirement{}, false, err
	}
	return r, true, nil
}

func refusedOption(line string) error {
	opt, _, _ := strings.Cut(strings.Fields(line)[0], "=")
	if why, ok := refusedOptions[opt]; ok {
		return invalid("option %s is not accepted here: %s", opt, why)
	}
	if strings.HasPrefix(opt, "-e") || strings.HasPrefix(opt, "-r") || strings.HasPrefix(opt, "-c") {
		return invalid("option %s is not accepted here: %s", opt[:2], refusedOptions[opt[:2]])
	}
	return invalid("option %s is not accepted here: only requirements and --hash", clip(opt))
}

// splitOptions cuts a line at its first option: whitespace then "-",
// outside the quotes of a marker (a requirement never has " -" otherwise).
func splitOptions(line string) (string, string) {
	quote := byte(0)
	for i := 1; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '-' && (line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i], line[i:]
		}
	}
	return line, ""
}

func parseHashes(opts string) ([]string, error) {
	var hashes []string
	fields := strings.Fields(opts)
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		var v string
		switch {
		case strings.HasPrefix(f, "--hash="):
			v = strings.TrimPrefix(f, "--hash=")
		case f == "--hash" && i+1 < len(fields):
			v = fields[i+1]
			i++
		case f == "--hash":
			return nil, invalid("--hash needs a value such as sha256:<hex>")
		default:
			opt, _, _ := strings.Cut(f, "=")
			return nil, invalid("option %s is not accepted after a requirement: only --hash", clip(opt))
		}
		v = strings.ToLower(v)
		if !hashPattern.MatchString(v) {
			return nil, invalid("--hash %q is not sha256:, sha384: or sha512: and the hex digest", clip(v))
		}
		if !slices.Contains(hashes, v) {
			hashes = append(hashes, v)
		}
	}
	slices.Sort(hashes)
	return hashes, nil
}

// RequirementsFile renders requirements in the file format pip reads,
// with their hashes.
func RequirementsFile(list []Requirement) []byte {
	var b strings.Builder
	for _, r := range list {
		b.WriteString(r.line() + "\n")
	}
	return []byte(b.String())
}

// hasHashes reports whether any requirement pins hashes.
func hasHashes(list []Requirement) bool {
	return slices.ContainsFunc(list, func(r Requirement) bool { return len(r.Hashes) > 0 })
}
