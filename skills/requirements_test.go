package skills

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func withRuntimeLines(name, version string, lines ...string) string {
	return actionTOML(name, version) + strings.Join(lines, "\n") + "\n"
}

func TestManifestRequirementsAndPreload(t *testing.T) {
	m, vs := ParseManifest([]byte(withRuntimeLines("acme.pdf.read", "1.0.0",
		`requirements = ["pypdf==6.16.1", "python-dateutil>=2.8"]`, `preload = ["pypdf", "dateutil.parser", "pypdf"]`)))
	require.Empty(t, vs)
	assert.Equal(t, []string{"pypdf==6.16.1", "python-dateutil>=2.8"}, m.Runtime.Requirements)
	assert.Equal(t, []string{"pypdf", "dateutil.parser"}, m.Runtime.Preload)
}

func TestManifestRequirementsRefused(t *testing.T) {
	cases := map[string]string{
		`requirements = "pypdf"`:                     "/runtime/requirements: wrong type",
		`requirements = [1]`:                         "/runtime/requirements/0: wrong type",
		`requirements = ["pypdf @ https://x/p.whl"]`: "URL requirements",
		`requirements = ["./wheels/p.whl"]`:          "a path or archive file",
		`requirements = ["pypdf==6", "PyPDF>=5"]`:    "/runtime/requirements/1: pypdf is already required by /runtime/requirements/0",
		`requirements = ["pypdf >>= 1"]`:             "not an operator",
		`preload = "pandas"`:                         "/runtime/preload: wrong type",
		`preload = ["pandas", "import"]`:             "/runtime/preload/1: not a module name",
		`preload = ["os.path", "a-b"]`:               "/runtime/preload/1: not a module name",
	}
	for line, want := range cases {
		_, vs := ParseManifest([]byte(withRuntimeLines("acme.pdf.read", "1.0.0", line)))
		require.NotEmpty(t, vs, line)
		assert.Contains(t, joinViolations(vs), want, line)
	}
}

func TestRequirementsFileBesideManifest(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, merge(
		actionPackage("ok", "acme.ok.run", "1.0.0"), map[string]string{"ok/requirements.txt": "# pinned\npypdf==6.16.1 \\\n  --hash=sha256:" + strings.Repeat("ab", 32) + "\n"},
		actionPackage("opt", "acme.opt.run", "1.0.0"), map[string]string{"opt/requirements.txt": "--index-url https://pypi.org/simple\npypdf\n"},
		actionPackage("dup", "acme.dup.run", "1.0.0"), map[string]string{"dup/requirements.txt": "PyPDF\n"},
	))
	writeTree(t, root, map[string]string{"dup/skill.toml": withRuntimeLines("acme.dup.run", "1.0.0", `requirements = ["pypdf==6"]`)})
	rep, err := Check(root, Options{})
	require.NoError(t, err)

	ok := reportFor(t, rep, "ok")
	assert.Equal(t, StatusSkipped, ok.Status, "no package source: the requirements cannot be installed")
	require.Len(t, ok.Violations, 1)
	assert.Contains(t, ok.Violations[0].Message, "no package source: start it with --python-find-links DIR|URL (a wheelhouse) or --python-index-url URL")
	assert.Equal(t, []string{"pypdf==6.16.1"}, ok.Violations[0].Actual)

	opt := reportFor(t, rep, "opt")
	require.Equal(t, StatusSkipped, opt.Status)
	assert.Equal(t, "requirements.txt", opt.Violations[0].File)
	assert.Contains(t, opt.Violations[0].Message, "line 1: option --index-url is not accepted here")

	dup := reportFor(t, rep, "dup")
	require.Equal(t, StatusSkipped, dup.Status)
	assert.Contains(t, joinViolations(dup.Violations), "pypdf is required in both skill.toml and requirements.txt")
}

func TestSkillWithoutRequirementsNeedsNoSource(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, actionPackage("a", "acme.a.run", "1.0.0"))
	writeTree(t, root, map[string]string{"a/skill.toml": withRuntimeLines("acme.a.run", "1.0.0", `preload = ["json"]`)})
	r, _ := newRegistry(t, Options{Dir: root})
	s, err := r.Catalog().Resolve("acme.a.run", "")
	require.NoError(t, err)
	assert.Equal(t, []string{"json"}, s.Preload())
	assert.Empty(t, s.EnvironmentKey())
	assert.Nil(t, r.Catalog().Environment(s))
}

func joinViolations(vs []Violation) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.String()
	}
	return strings.Join(parts, "\n")
}
