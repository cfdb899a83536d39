package skills

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/internal/testlog"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newRegistry loads root with a logger writing JSON lines to the buffer.
func newRegistry(t *testing.T, opts Options) (*Registry, *testlog.Buffer) {
	t.Helper()
	logs := &testlog.Buffer{}
	opts.Logger = zerolog.New(logs)
	r, err := NewRegistry(opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	return r, logs
}

// reportFor finds the report of the package folder whose path ends in rel.
func reportFor(t *testing.T, rep LoadReport, rel string) PackageReport {
	t.Helper()
	for _, p := range rep.Packages {
		if strings.HasSuffix(p.Dir, "/"+rel) {
			return p
		}
	}
	t.Fatalf("no report for %s in %+v", rel, rep.Packages)
	return PackageReport{}
}

func lastReport(t *testing.T, r *Registry) LoadReport {
	t.Helper()
	rep, err := r.Reload()
	require.NoError(t, err)
	return rep
}

func TestExamplesLoadCleanly(t *testing.T) {
	r, _ := newRegistry(t, Options{Dir: "../examples/skills"})
	rep := lastReport(t, r)
	require.Len(t, rep.Packages, 6)
	for _, p := range rep.Packages {
		assert.Equal(t, StatusLoaded, p.Status, p.Dir)
		assert.Empty(t, p.Violations, p.Dir)
		assert.Empty(t, p.Warnings, p.Dir)
	}
	cat := r.Catalog()
	assert.Equal(t, []string{"1.1.0", "1.0.0"}, cat.Versions("acme.math.add"))
	latest, err := cat.Resolve("acme.math.add", "")
	require.NoError(t, err)
	assert.Equal(t, "1.1.0", latest.Manifest.Version)
	for name, kind := range map[string]Kind{"acme.text.wordcount": KindAction, "acme.style.guide": KindInstruction, "pdf-tips": KindInstruction, "csv-report": KindInstruction, GuideName: KindInstruction} {
		s, err := cat.Resolve(name, "")
		require.NoError(t, err, name)
		assert.Equal(t, kind, s.Manifest.Kind, name)
	}
	pdf, _ := cat.Resolve("pdf-tips", "")
	assert.Equal(t, SourceAgentSkill, pdf.Source)
	assert.Equal(t, "1.0.0", pdf.Manifest.Version, "from metadata.version")
	assert.Equal(t, "pdf-tips", pdf.Namespace)
	_, _, err = pdf.ReadFile("references/REFERENCE.md")
	assert.NoError(t, err)
}

func TestLoadBrokenPackages(t *testing.T) {
	root := t.TempDir()
	badTOML := strings.Replace(actionTOML("acme.bad.toml", "1.0"), `export = "main"`, `export = "main"`+"\nshell = true", 1)
	tooMany := map[string]string{}
	for i := range 6 {
		tooMany["many/resources/f"+string(rune('a'+i))] = "x"
	}
	writeTree(t, root, merge(
		actionPackage("good", "acme.good.one", "1.0.0"),
		map[string]string{
			"bad-toml/skill.toml": badTOML, "bad-toml/SKILL.md": "no front matter\n",
			"no-md/skill.toml": actionTOML("acme.no.md", "1.0.0"), "no-md/code/main.py": "",
			"no-entry/skill.toml": actionTOML("acme.no.entry", "1.0.0"), "no-entry/SKILL.md": packageMD("x"),
			"bad-front/skill.toml": actionTOML("acme.bad.front", "1.0.0"), "bad-front/code/main.py": "",
			"bad-front/SKILL.md":     "---\nname: X\ntags: nope\n---\n",
			"Agent_Badname/SKILL.md": "---\nname: Also_Bad\ndescription: d\n---\n",
			"binary-md/SKILL.md":     "---\nname: binary-md\ndescription: \xff\xfe\n---\n",
			"big/SKILL.md":           "---\nname: big\ndescription: d\n---\n" + strings.Repeat("x", 3000),
			"many/SKILL.md":          "---\nname: many\ndescription: d\n---\n",
		},
		tooMany,
	))
	r, logs := newRegistry(t, Options{Dir: root, MaxSkillFiles: 5, MaxSkillBytes: 2000})
	rep := lastReport(t, r)
	want := map[string][]string{
		"bad-toml":      {"skill.toml:/version", "skill.toml:/runtime/shell", "skill.toml:/runtime/entrypoint", "SKILL.md:"},
		"no-md":         {"SKILL.md:"},
		"no-entry":      {"skill.toml:/runtime/entrypoint"},
		"bad-front":     {"SKILL.md:/short_description", "SKILL.md:/tags"},
		"Agent_Badname": {"SKILL.md:/name"},
		"binary-md":     {"SKILL.md:"},
		"big":           {":/size_bytes"},
		"many":          {":/files"},
	}
	for rel, fs := range want {
		p := reportFor(t, rep, rel)
		assert.Equal(t, StatusSkipped, p.Status, rel)
		assert.Equal(t, fs, fields(p.Violations), "%s: %v", rel, p.Violations)
	}
	assert.Equal(t, StatusLoaded, reportFor(t, rep, "good").Status)
	assert.Equal(t, 2, r.Catalog().Len(), "the good package and the guide")

	// One log line per invalid package, naming its path and every violation.
	lines := logLines(t, logs, "skill package invalid, skipped")
	perPath := map[string]int{}
	for _, l := range lines {
		perPath[l["path"].(string)]++
	}
	for rel, fs := range want {
		path := filepath.Join(r.Dir(), rel)
		assert.Equal(t, 2, perPath[path], "%s logged once per load (NewRegistry + Reload)", rel)
		for _, l := range lines {
			if l["path"] == path {
				assert.Len(t, l["violations"], len(fs), rel)
			}
		}
	}
}

func logLines(t *testing.T, logs *testlog.Buffer, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(logs.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m))
		if m["message"] == msg {
			out = append(out, m)
		}
	}
	return out
}

func TestNestedSkillNotSearched(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, merge(
		actionPackage("outer", "acme.outer.x", "1.0.0"),
		actionPackage("outer/resources/inner", "acme.inner.x", "1.0.0"),
		actionPackage("deep/a/b/c", "acme.deep.x", "1.0.0"),
	))
	r, _ := newRegistry(t, Options{Dir: root})
	cat := r.Catalog()
	_, err := cat.Resolve("acme.inner.x", "")
	assert.ErrorIs(t, err, ErrSkillNotFound)
	outer, err := cat.Resolve("acme.outer.x", "")
	require.NoError(t, err)
	_, err = outer.Stat("resources/inner/skill.toml")
	assert.NoError(t, err, "the nested folder is part of the outer snapshot")
	_, err = cat.Resolve("acme.deep.x", "")
	assert.NoError(t, err, "folders without a skill are searched at any depth")
}

func TestDuplicateNameVersion(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, merge(
		actionPackage("b-copy", "acme.dup.x", "1.0.0"),
		actionPackage("a-orig", "acme.dup.x", "1.0.0"),
		actionPackage("c-next", "acme.dup.x", "2.0.0"),
	))
	r, _ := newRegistry(t, Options{Dir: root})
	rep := lastReport(t, r)
	win, lose := reportFor(t, rep, "a-orig"), reportFor(t, rep, "b-copy")
	assert.Equal(t, StatusLoaded, win.Status)
	require.Len(t, win.Warnings, 1)
	assert.Contains(t, win.Warnings[0].Message, "b-copy")
	assert.Equal(t, StatusSkipped, lose.Status)
	require.Len(t, lose.Violations, 1)
	assert.Equal(t, "/version", lose.Violations[0].Field)
	assert.Contains(t, lose.Violations[0].Message, "a-orig")

	s, err := r.Catalog().Resolve("acme.dup.x", "1.0.0")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(r.Dir(), "a-orig"), s.Dir)
	assert.Equal(t, []string{"2.0.0", "1.0.0"}, r.Catalog().Versions("acme.dup.x"))
}

func TestSymlinks(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret.txt": "top secret", "SKILL.md": packageMD("evil")})
	writeTree(t, root, merge(actionPackage("pkg", "acme.links.x", "1.0.0"), map[string]string{"pkg/resources/data.txt": "inside"}))
	pkg := filepath.Join(root, "pkg")
	links := map[string]string{
		"resources/alias.txt": "data.txt",                               // inside: served
		"resources/out.txt":   filepath.Join(outside, "secret.txt"),     // absolute, outside
		"resources/rel-out":   "../../" + filepath.Base(outside) + "/x", // relative, outside
		"resources/climb.txt": "../../../../../../etc/passwd",           // outside
		"resources/dir":       "../code",                                // a folder
		"resources/dangling":  "nowhere.txt",                            // missing
	}
	for l, target := range links {
		require.NoError(t, os.Symlink(target, filepath.Join(pkg, filepath.FromSlash(l))))
	}
	// A package whose SKILL.md is a symlink out is invalid.
	evilTOML := "name = \"acme.evil.x\"\nversion = \"1.0.0\"\ndescription = \"x\"\nkind = \"instruction\"\n"
	writeTree(t, root, map[string]string{"evil/skill.toml": evilTOML})
	require.NoError(t, os.Symlink(filepath.Join(outside, "SKILL.md"), filepath.Join(root, "evil", "SKILL.md")))

	r, _ := newRegistry(t, Options{Dir: root})
	rep := lastReport(t, r)
	p := reportFor(t, rep, "pkg")
	assert.Equal(t, StatusLoaded, p.Status)
	assert.Len(t, p.Warnings, 5, "%v", p.Warnings)
	evil := reportFor(t, rep, "evil")
	assert.Equal(t, StatusSkipped, evil.Status)
	assert.Equal(t, []string{"SKILL.md:"}, fields(evil.Violations))

	s, err := r.Catalog().Resolve("acme.links.x", "")
	require.NoError(t, err)
	data, info, err := s.ReadFile("resources/alias.txt")
	require.NoError(t, err)
	assert.Equal(t, "inside", string(data))
	assert.Equal(t, int64(6), info.Size)
	for _, l := range []string{"resources/out.txt", "resources/rel-out", "resources/climb.txt", "resources/dir", "resources/dir/main.py", "resources/dangling"} {
		_, _, err := s.ReadFile(l)
		assert.ErrorIs(t, err, ErrPathRefused, l)
	}
	for _, f := range s.Files() {
		assert.NotContains(t, f.Path, "out", "no file from outside is in the snapshot")
	}
}

func TestIgnoredNames(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, merge(actionPackage("pkg", "acme.ign.x", "1.0.0"), map[string]string{
		"pkg/.git/config": "x", "pkg/code/.main.py.swp": "x", "pkg/code/main.py~": "x",
		"pkg/code/__pycache__/main.cpython-311.pyc": "x", "pkg/.env": "SECRET=1",
		".hidden/skill.toml": "garbage", "__pycache__/SKILL.md": "garbage",
	}))
	r, _ := newRegistry(t, Options{Dir: root})
	s, err := r.Catalog().Resolve("acme.ign.x", "")
	require.NoError(t, err)
	var paths []string
	for _, f := range s.Files() {
		paths = append(paths, f.Path)
	}
	assert.Equal(t, []string{"SKILL.md", "code/main.py", "code/ops.py", "skill.toml"}, paths)
	assert.Len(t, lastReport(t, r).Packages, 1, "hidden folders are not searched")
}

func TestSnapshotIsImmutable(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, actionPackage("pkg", "acme.snap.x", "1.0.0"))
	r, _ := newRegistry(t, Options{Dir: root})
	old, err := r.Catalog().Resolve("acme.snap.x", "")
	require.NoError(t, err)
	oldDigest := old.Digest()

	writeTree(t, root, map[string]string{"pkg/code/ops.py": "def add(a, b):\n    return a - b\n"})
	data, _, err := old.ReadFile("code/ops.py")
	require.NoError(t, err)
	assert.Contains(t, string(data), "a + b", "an edit on disk does not reach a loaded snapshot")

	data[0] = 'X' // a caller scribbling on its copy
	again, _, _ := old.ReadFile("code/ops.py")
	assert.Equal(t, byte('d'), again[0])

	lastReport(t, r)
	cur, err := r.Catalog().Resolve("acme.snap.x", "")
	require.NoError(t, err)
	data, _, _ = cur.ReadFile("code/ops.py")
	assert.Contains(t, string(data), "a - b", "a reload picks the edit up")
	assert.NotEqual(t, oldDigest, cur.Digest())
	assert.Equal(t, oldDigest, old.Digest())

	lastReport(t, r)
	same, _ := r.Catalog().Resolve("acme.snap.x", "")
	assert.Same(t, cur, same, "an unchanged folder keeps its snapshot value across reloads")
}

func TestRegistryOptions(t *testing.T) {
	_, err := NewRegistry(Options{Dir: filepath.Join(t.TempDir(), "missing")})
	assert.Error(t, err)
	file := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err = NewRegistry(Options{Dir: file})
	assert.Error(t, err)
	_, err = NewRegistry(Options{MaxSkillFiles: -1})
	assert.Error(t, err)

	var seen []int
	r, err := NewRegistry(Options{Logger: zerolog.Nop(), OnReload: func(c *Catalog, rep LoadReport) { seen = append(seen, c.Len()) }})
	require.NoError(t, err)
	assert.Equal(t, 1, r.Catalog().Len(), "without a dir only the built-ins")
	_, err = r.Reload()
	require.NoError(t, err)
	assert.Equal(t, []int{1, 1}, seen, "OnReload sees every load")
	require.NoError(t, r.Close())
	require.NoError(t, r.Close())
	_, err = r.Reload()
	assert.ErrorIs(t, err, ErrRegistryClosed)
}

func TestAgentSkillVersionWarning(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"loose-version/SKILL.md": "---\nname: loose-version\ndescription: d\nmetadata:\n  version: \"v2\"\n---\n",
		"no-version/SKILL.md":    "---\nname: no-version\ndescription: d\n---\n",
	})
	r, _ := newRegistry(t, Options{Dir: root})
	rep := lastReport(t, r)
	p := reportFor(t, rep, "loose-version")
	assert.Equal(t, StatusLoaded, p.Status)
	assert.Equal(t, []string{"SKILL.md:/metadata/version"}, fields(p.Warnings))
	assert.Empty(t, reportFor(t, rep, "no-version").Warnings)
	for _, n := range []string{"loose-version", "no-version"} {
		s, err := r.Catalog().Resolve(n, "0.0.0")
		require.NoError(t, err, n)
		assert.Equal(t, KindInstruction, s.Manifest.Kind)
		assert.Equal(t, "d", s.Manifest.Description)
	}
}
