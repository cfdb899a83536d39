package pyenvtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// DataDir is a temporary data directory for a gateway that builds
// environments. Built environments are read-only trees, which only root
// may remove as they are: the directory's directories regain their write
// bit before the test's temporary directories are removed, so that the
// tests clean up as an unprivileged user too.
func DataDir(t testing.TB) string {
	dir := t.TempDir()
	t.Cleanup(func() {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o755)
			}
			return nil
		})
	})
	return dir
}
