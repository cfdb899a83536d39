package pyenv

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/internal/pyname"
)

// RunKey is the content address of what a run sees: the environment
// directories in search order and the modules preloaded. Two runs with
// equal RunKeys can share a template. It is "" when both are empty (the
// host's packages alone).
func RunKey(paths, preload []string) string {
	if len(paths) == 0 && len(preload) == 0 {
		return ""
	}
	h := sha256.New()
	for _, p := range paths {
		fmt.Fprintf(h, "path %s\n", p)
	}
	for _, m := range preload {
		fmt.Fprintf(h, "preload %s\n", m)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// Conflict is one distribution two environments hold at different
// versions.
type Conflict struct {
	Name     string
	Versions [2]string
}

// Conflicts lists the distributions a and b both hold at different
// versions: in one run, only the first would be importable, and the
// second environment's code would meet a version it was not built with.
func Conflicts(a, b *Env) []Conflict {
	if a == nil || b == nil || a.Key == b.Key {
		return nil
	}
	versions := make(map[string]string, len(a.Installed))
	for _, d := range a.Installed {
		versions[NormalizeName(d.Name)] = d.Version
	}
	var out []Conflict
	for _, d := range b.Installed {
		n := NormalizeName(d.Name)
		if v, ok := versions[n]; ok && v != d.Version {
			out = append(out, Conflict{Name: n, Versions: [2]string{v, d.Version}})
		}
	}
	slices.SortFunc(out, func(x, y Conflict) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// ValidModuleName reports whether s is a dotted Python module name a
// preload list may hold: identifiers, no keywords, separated by dots.
func ValidModuleName(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for part := range strings.SplitSeq(s, ".") {
		if !pyname.IsIdentifier(part) {
			return false
		}
	}
	return true
}
