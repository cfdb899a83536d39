package skills

import (
	"fmt"
	"strings"

	"github.com/skillgate/skillgate/internal/pyname"
)

const (
	// MaxNameLen bounds a dotted skill name.
	MaxNameLen = 128
	// maxAgentNameLen bounds an Agent Skills name (agentskills.io).
	maxAgentNameLen = 64
	// ReservedNamespace is kept for built-in skills: no package on disk may
	// use it, so a built-in can never be shadowed.
	ReservedNamespace = "skills"
)

// ValidateSkillName checks a dotted skill name: at least two segments
// separated by single dots, each segment lowercase [a-z][a-z0-9]* and not a
// Python keyword (names become import paths), at most MaxNameLen bytes.
func ValidateSkillName(name string) error {
	if name == "" {
		return fmt.Errorf("empty name")
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("longer than %d characters", MaxNameLen)
	}
	segs := strings.Split(name, ".")
	if len(segs) < 2 {
		return fmt.Errorf("needs at least two dot-separated segments, like namespace.action")
	}
	for _, s := range segs {
		if err := checkNameSegment(s); err != nil {
			return err
		}
	}
	return nil
}

func checkNameSegment(s string) error {
	if s == "" {
		return fmt.Errorf("empty segment (leading, trailing or double dot)")
	}
	if s[0] < 'a' || s[0] > 'z' {
		return fmt.Errorf("segment %q must start with a lowercase letter", s)
	}
	for i := 1; i < len(s); i++ {
		if !isLowerAlnum(s[i]) {
			return fmt.Errorf("segment %q may hold only lowercase letters and digits", s)
		}
	}
	if pyname.IsKeyword(s) {
		return fmt.Errorf("segment %q is a Python keyword and could not be imported", s)
	}
	return nil
}

// validateAgentSkillName checks an Agent Skills name: 1-64 characters of
// lowercase a-z, 0-9 and single hyphens, no leading or trailing hyphen.
func validateAgentSkillName(name string) error {
	if name == "" {
		return fmt.Errorf("empty name")
	}
	if len(name) > maxAgentNameLen {
		return fmt.Errorf("longer than %d characters", maxAgentNameLen)
	}
	for i := 0; i < len(name); i++ {
		if !isLowerAlnum(name[i]) && name[i] != '-' {
			return fmt.Errorf("may hold only lowercase letters, digits and hyphens")
		}
	}
	if name[0] == '-' || name[len(name)-1] == '-' || strings.Contains(name, "--") {
		return fmt.Errorf("hyphens may not lead, trail or repeat")
	}
	return nil
}

// plausibleName is the cheap check applied to names read back from
// cursors: the union of both naming rules' alphabets.
func plausibleName(name string) bool {
	if name == "" || len(name) > MaxNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isLowerAlnum(name[i]) && name[i] != '-' && name[i] != '.' {
			return false
		}
	}
	return true
}

func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// isEnvVarName accepts [A-Z_][A-Z0-9_]*.
func isEnvVarName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c == '_' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9'
		if !ok {
			return false
		}
	}
	return true
}

// namespaceOf returns the first dotted segment of name.
func namespaceOf(name string) string {
	ns, _, _ := strings.Cut(name, ".")
	return ns
}

// inNamespace reports whether name lies in namespace ns, matching whole
// dotted prefixes: "acme" holds "acme" and "acme.x.y" but not "acmecorp.x".
// An empty ns holds every name.
func inNamespace(name, ns string) bool {
	if ns == "" || name == ns {
		return true
	}
	return len(name) > len(ns) && name[len(ns)] == '.' && strings.HasPrefix(name, ns)
}
