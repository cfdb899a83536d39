package skills

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// writeTree creates files (slash paths relative to root) with contents.
func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// actionTOML is a valid action manifest.
func actionTOML(name, version string) string {
	return fmt.Sprintf(`name = %q
version = %q
description = "Test skill %s."
kind = "action"

[runtime]
language = "python"
entrypoint = "code/main.py"
export = "main"
`, name, version, name)
}

// packageMD is a valid SKILL.md for a skill.toml package.
func packageMD(title string) string {
	return "---\nname: " + title + "\nshort_description: A test skill.\ntags: [test]\n---\n# " + title + "\n\nBody.\n"
}

// actionPackage returns the files of a valid action package under dir.
func actionPackage(dir, name, version string) map[string]string {
	dir = strings.TrimSuffix(dir, "/")
	return map[string]string{
		dir + "/skill.toml":   actionTOML(name, version),
		dir + "/SKILL.md":     packageMD(name),
		dir + "/code/main.py": "from .ops import add\n\ndef main(args):\n    return {'v': " + fmt.Sprintf("%q", version) + "}\n",
		dir + "/code/ops.py":  "def add(a, b):\n    return a + b\n",
	}
}

// merge joins file maps.
func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
