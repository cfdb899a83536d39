package sandbox

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// Bounds of an Environment.
const (
	maxEnvPaths   = 8
	maxEnvPreload = 32
)

// inRunPaths are e's directories as the run sees them, in search order.
func (e Environment) inRunPaths() []string {
	out := make([]string, len(e.Paths))
	for i, p := range e.Paths {
		out[i] = path.Join(wire.EnvMount, filepath.Base(p))
	}
	return out
}

// validate checks what a Job or Config brings: absolute, clean host
// directories with distinct names that are safe path segments, dotted
// module names, and a Key exactly when there is something to key.
func (e Environment) validate() error {
	if (e.Key == "") != (len(e.Paths) == 0 && len(e.Preload) == 0) {
		return fmt.Errorf("environment: a key is required exactly when paths or preload are given")
	}
	if len(e.Key) > 128 || !printableASCII(e.Key) {
		return fmt.Errorf("environment: key must be at most 128 printable ASCII bytes")
	}
	if len(e.Paths) > maxEnvPaths {
		return fmt.Errorf("environment: more than %d directories", maxEnvPaths)
	}
	names := make(map[string]bool, len(e.Paths))
	for _, p := range e.Paths {
		name := filepath.Base(p)
		switch {
		case !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/":
			return fmt.Errorf("environment: directory %q is not a clean absolute path", p)
		case checkFilePath(name) != nil || strings.HasPrefix(name, "."):
			return fmt.Errorf("environment: directory %q: its name is no safe path segment", p)
		case names[name]:
			return fmt.Errorf("environment: two directories named %q", name)
		}
		names[name] = true
	}
	if len(e.Preload) > maxEnvPreload {
		return fmt.Errorf("environment: more than %d preloaded modules", maxEnvPreload)
	}
	for _, m := range e.Preload {
		for _, part := range strings.Split(m, ".") {
			if err := checkIdentifier(part); err != nil {
				return fmt.Errorf("environment: preload %q: %w", m, err)
			}
		}
	}
	return nil
}
