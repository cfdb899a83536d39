package sandbox

import (
	"fmt"
	"strings"

	"github.com/skillgate/skillgate/internal/pyname"
)

// Bounds on what a job may carry.
const (
	maxNameLen     = 128
	maxPathLen     = 1024
	maxSegmentLen  = 255
	maxBlobIDLen   = 256
	maxKindLen     = 255
	maxEnvKeyLen   = 256
	maxEnvValueLen = 64 << 10
	maxEnvEntries  = 256
	maxJobFiles    = 20000
	maxJobBytes    = 1 << 30
	maxArgsBytes   = 16 << 20
	maxRunIDLen    = 128
)

// reservedEnv are set by the sandbox itself.
var reservedEnv = map[string]bool{
	"PATH": true, "HOME": true, "LANG": true, "TMPDIR": true, "PWD": true,
	"PYTHONPATH": true, // the run's environment (Job.Environment)
}

// checkIdentifier accepts an ASCII Python identifier that is not a keyword.
func checkIdentifier(s string) error {
	if s == "" {
		return fmt.Errorf("empty identifier")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return fmt.Errorf("%q is not a Python identifier", s)
	}
	if pyname.IsKeyword(s) {
		return fmt.Errorf("%q is a Python keyword", s)
	}
	return nil
}

// checkSkillName accepts dotted identifiers such as "acme.math.add" and
// Agent Skills names such as "pdf-forms" (lowercase letters, digits and
// single inner hyphens): either is one safe path segment under /skills.
func checkSkillName(name string) error {
	if len(name) > maxNameLen {
		return fmt.Errorf("skill name longer than %d bytes", maxNameLen)
	}
	if isAgentSkillName(name) {
		return nil
	}
	for _, seg := range strings.Split(name, ".") {
		if err := checkIdentifier(seg); err != nil {
			return fmt.Errorf("skill name %q: %w", name, err)
		}
	}
	return nil
}

// checkFilePath accepts a relative slash-separated path without empty, "."
// or ".." segments, backslashes or control characters.
func checkFilePath(p string) error {
	if p == "" || len(p) > maxPathLen {
		return fmt.Errorf("path %q: empty or longer than %d bytes", p, maxPathLen)
	}
	for _, seg := range strings.Split(p, "/") {
		switch {
		case seg == "" || seg == "." || seg == "..":
			return fmt.Errorf("path %q: empty, absolute or dot segment", p)
		case len(seg) > maxSegmentLen:
			return fmt.Errorf("path %q: segment longer than %d bytes", p, maxSegmentLen)
		}
		for i := 0; i < len(seg); i++ {
			if seg[i] < 0x20 || seg[i] == 0x7f || seg[i] == '\\' {
				return fmt.Errorf("path %q: control character or backslash", p)
			}
		}
	}
	return nil
}

// modulePath turns "code/main.py" into "code.main"; every segment must be
// an identifier. "pkg/__init__.py" is the package "pkg".
func modulePath(p string) (string, error) {
	if err := checkFilePath(p); err != nil {
		return "", err
	}
	stem, ok := strings.CutSuffix(p, ".py")
	if !ok {
		return "", fmt.Errorf("module %q is not a .py file", p)
	}
	segs := strings.Split(stem, "/")
	if len(segs) > 1 && segs[len(segs)-1] == "__init__" {
		segs = segs[:len(segs)-1]
	}
	for _, s := range segs {
		if err := checkIdentifier(s); err != nil {
			return "", fmt.Errorf("module %q: %w", p, err)
		}
	}
	return strings.Join(segs, "."), nil
}

// checkBlobID accepts ids like "blob:sheet-123".
func checkBlobID(id string) error {
	if id == "" || len(id) > maxBlobIDLen {
		return fmt.Errorf("blob id %q: empty or longer than %d bytes", id, maxBlobIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			i > 0 && strings.IndexByte("._:@+=-", c) >= 0
		if !ok {
			return fmt.Errorf("blob id %q: character %q not allowed", id, c)
		}
	}
	return nil
}

// checkKind accepts a media type such as "text/plain" (empty for inputs).
func checkKind(kind string, allowEmpty bool) error {
	if kind == "" && allowEmpty {
		return nil
	}
	if len(kind) > maxKindLen || !strings.Contains(kind, "/") || strings.HasPrefix(kind, "/") {
		return fmt.Errorf("kind %q is not a media type", kind)
	}
	for i := 0; i < len(kind); i++ {
		if kind[i] < 0x20 || kind[i] >= 0x7f {
			return fmt.Errorf("kind %q: non-printable character", kind)
		}
	}
	return nil
}

// checkEnv accepts NAME=value pairs that execve can carry.
func checkEnv(env map[string]string) error {
	if len(env) > maxEnvEntries {
		return fmt.Errorf("more than %d environment variables", maxEnvEntries)
	}
	for k, v := range env {
		if len(k) > maxEnvKeyLen || checkEnvKey(k) != nil {
			return fmt.Errorf("environment variable name %q is invalid", k)
		}
		if reservedEnv[k] {
			return fmt.Errorf("environment variable %s is set by the sandbox", k)
		}
		if len(v) > maxEnvValueLen || strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("environment variable %s: value too long or contains NUL", k)
		}
	}
	return nil
}

func checkEnvKey(k string) error {
	if k == "" {
		return fmt.Errorf("empty")
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return fmt.Errorf("bad character")
	}
	return nil
}

func isAgentSkillName(name string) bool {
	if name == "" || name[0] == '-' || name[len(name)-1] == '-' || strings.Contains(name, "--") {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
