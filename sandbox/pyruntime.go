package sandbox

import (
	"embed"
	"io/fs"
	"os"
	"path/filepath"
)

// pyRuntime is the Python side: the boot script and the `runtime` package
// offered to skills and run_code.
//
//go:embed runtime/*.py
var pyRuntime embed.FS

// installRuntime writes the embedded runtime under dir (dir/runtime/...),
// world-readable so that the sandbox user can import it.
func installRuntime(dir string) error {
	return fs.WalkDir(pyRuntime, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if d.IsDir() {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
			return os.Chmod(dst, 0o755)
		}
		data, err := pyRuntime.ReadFile(name)
		if err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return err
		}
		return os.Chmod(dst, 0o644)
	})
}
