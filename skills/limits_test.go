package skills

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const limitsSkillMD = "---\nname: lim\ndescription: d\n---\n"

// A package may hold exactly MaxSkillFiles files; one more rejects it.
func TestMaxSkillFilesBoundary(t *testing.T) {
	for _, tc := range []struct {
		files int
		ok    bool
	}{{2, true}, {3, true}, {4, false}} {
		root := t.TempDir()
		tree := map[string]string{"lim/SKILL.md": limitsSkillMD}
		for i := 1; i < tc.files; i++ {
			tree["lim/f"+string(rune('0'+i))+".txt"] = "x"
		}
		writeTree(t, root, tree)
		r, _ := newRegistry(t, Options{Dir: root, MaxSkillFiles: 3})
		p := reportFor(t, lastReport(t, r), "lim")
		if tc.ok {
			assert.Equal(t, StatusLoaded, p.Status, "%d files", tc.files)
			s, err := r.Catalog().Resolve("lim", "")
			require.NoError(t, err)
			assert.Len(t, s.Files(), tc.files)
			continue
		}
		assert.NotEqual(t, StatusLoaded, p.Status, "%d files", tc.files)
		assert.Equal(t, []string{":/files"}, fields(p.Violations), "%d files", tc.files)
	}
}

// A package may hold exactly MaxSkillBytes bytes in total; one more byte
// rejects it.
func TestMaxSkillBytesBoundary(t *testing.T) {
	for _, tc := range []struct {
		over int
		ok   bool
	}{{-1, true}, {0, true}, {1, false}} {
		const limit = 1000
		root := t.TempDir()
		writeTree(t, root, map[string]string{
			"lim/SKILL.md": limitsSkillMD,
			"lim/data.txt": strings.Repeat("x", limit-len(limitsSkillMD)+tc.over),
		})
		r, _ := newRegistry(t, Options{Dir: root, MaxSkillBytes: limit})
		p := reportFor(t, lastReport(t, r), "lim")
		if tc.ok {
			assert.Equal(t, StatusLoaded, p.Status, "over %d", tc.over)
			s, err := r.Catalog().Resolve("lim", "")
			require.NoError(t, err)
			assert.Equal(t, int64(limit+tc.over), s.TotalBytes())
			continue
		}
		assert.NotEqual(t, StatusLoaded, p.Status, "over %d", tc.over)
		assert.Equal(t, []string{":/size_bytes"}, fields(p.Violations), "over %d", tc.over)
	}
}

// NotFoundError says what was asked and what exists.
func TestNotFoundErrorText(t *testing.T) {
	assert.Equal(t, `skill "a" not found`, (&NotFoundError{Name: "a"}).Error())
	assert.Equal(t, `skill "a" version "2.0.0" not found`, (&NotFoundError{Name: "a", Version: "2.0.0"}).Error())
	assert.Equal(t, `skill "a" version "2.0.0" not found (available: 1.1.0, 1.0.0)`,
		(&NotFoundError{Name: "a", Version: "2.0.0", Available: []string{"1.1.0", "1.0.0"}}).Error())
	assert.True(t, errors.Is(&NotFoundError{Name: "a"}, ErrSkillNotFound))
}

// Versions are listed by descending precedence; versions that differ only
// in build metadata (equal precedence) by descending text, so the order
// does not depend on the folders' order.
func TestVersionsOrderWithBuildMetadata(t *testing.T) {
	root := t.TempDir()
	toml := func(v string) string {
		return "name = \"acme.tie\"\nversion = \"" + v + "\"\ndescription = \"d\"\nkind = \"instruction\"\n"
	}
	writeTree(t, root, map[string]string{
		"a/SKILL.md":   "---\nname: x\nshort_description: d.\n---\n",
		"a/skill.toml": toml("1.0.0+a"),
		"b/SKILL.md":   "---\nname: x\nshort_description: d.\n---\n",
		"b/skill.toml": toml("1.0.1"),
		"c/SKILL.md":   "---\nname: x\nshort_description: d.\n---\n",
		"c/skill.toml": toml("1.0.0+b"),
		"d/SKILL.md":   "---\nname: x\nshort_description: d.\n---\n",
		"d/skill.toml": toml("0.9.0"),
	})
	r, _ := newRegistry(t, Options{Dir: root})
	for _, p := range lastReport(t, r).Packages {
		require.Equal(t, StatusLoaded, p.Status, "%+v", p)
	}
	assert.Equal(t, []string{"1.0.1", "1.0.0+b", "1.0.0+a", "0.9.0"}, r.Catalog().Versions("acme.tie"))
	assert.Nil(t, r.Catalog().Versions("none"))
}

// A cursor may be 1024 characters long: one of exactly 1024 is decoded
// (and here found to be no cursor of List's); 1025 are refused unread.
func TestListCursorLengthBoundary(t *testing.T) {
	c := newCatalog([]*Skill{fakeSkill(t, "acme.a", "1.0.0")})
	_, err := c.List(ListQuery{Cursor: strings.Repeat("A", 1024)})
	require.ErrorIs(t, err, ErrInvalidCursor)
	assert.Contains(t, err.Error(), "unknown cursor format")
	_, err = c.List(ListQuery{Cursor: strings.Repeat("A", 1025)})
	require.ErrorIs(t, err, ErrInvalidCursor)
	assert.Contains(t, err.Error(), "cursor too long")
}

// Blank lines inside the front matter are part of it, not its end.
func TestFrontMatterBlankLines(t *testing.T) {
	front, body, found, err := splitFrontMatter([]byte("---\na: 1\n\n\nb: 2\n---\n\nbody"))
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, "a: 1\n\n\nb: 2\n", string(front))
	assert.Equal(t, "\nbody", string(body))
}

// Documented bounds of a package's fields, at and one past the limit: a
// skill.toml description of 1024 characters, a SKILL.md description of
// 1024, a skill name of 128 bytes, a timeout of at least 1 ms.
func TestManifestFieldBounds(t *testing.T) {
	manifest := func(desc, timeout string) string {
		return "name = \"acme.a\"\nversion = \"1.0.0\"\ndescription = \"" + desc + "\"\nkind = \"action\"\n" +
			"[runtime]\nlanguage = \"python\"\nentrypoint = \"main.py\"\nexport = \"main\"\ntimeout_ms = " + timeout + "\n"
	}
	_, vs := ParseManifest([]byte(manifest(strings.Repeat("d", 1024), "1")))
	assert.Empty(t, vs)
	_, vs = ParseManifest([]byte(manifest(strings.Repeat("d", 1025), "1")))
	assert.Equal(t, []string{"skill.toml:/description"}, fields(vs))
	_, vs = ParseManifest([]byte(manifest("d", "0")))
	assert.Equal(t, []string{"skill.toml:/runtime/timeout_ms"}, fields(vs))

	for _, n := range []int{1023, 1024, 1025} {
		c := &collector{file: skillMDFile}
		checkAgentFront(c, c, map[string]any{"name": "pdf-tips", "description": strings.Repeat("d", n)}, "pdf-tips", "")
		if n <= 1024 {
			assert.Empty(t, c.list, "%d characters", n)
		} else {
			assert.Equal(t, []string{"SKILL.md:/description"}, fields(c.list))
		}
	}

	name := "acme." + strings.Repeat("a", 128-5)
	assert.NoError(t, ValidateSkillName(name))
	assert.Error(t, ValidateSkillName(name+"a"))
}

// Name alphabets at their edges: a-z and 0-9 are in, the bytes just
// outside them ('`', '{', '/', ':') are not; lengths at and past 64
// (Agent Skills names) and 128 (names read back from cursors).
func TestNameAlphabetEdges(t *testing.T) {
	for _, ok := range []string{"acme.a09z", "zeta.z", "a.b"} {
		assert.NoError(t, ValidateSkillName(ok), ok)
	}
	for _, bad := range []string{"acme.`a", "acme.{a", "acme.a`", "acme.a{", "acme.a/", "acme.a:", "acme.9a"} {
		assert.Error(t, ValidateSkillName(bad), bad)
	}
	for _, ok := range []string{"a09z", "z-0", strings.Repeat("a", 64)} {
		assert.NoError(t, validateAgentSkillName(ok), ok)
	}
	for _, bad := range []string{"a`", "a{", "a/", "a:", strings.Repeat("a", 65)} {
		assert.Error(t, validateAgentSkillName(bad), bad)
	}
	for _, ok := range []string{"_", "A", "Z", "A0", "A9", "_Z_9"} {
		assert.True(t, isEnvVarName(ok), ok)
	}
	for _, bad := range []string{"", "0A", "9", "A/", "A:", "@", "[", "a"} {
		assert.False(t, isEnvVarName(bad), bad)
	}

	c := newCatalog([]*Skill{fakeSkill(t, "acme.a", "1.0.0")})
	cursor := func(last string) string {
		return base64.RawURLEncoding.EncodeToString([]byte(cursorMagic + "\x00" + last))
	}
	long := "acme." + strings.Repeat("a", 128-5)
	_, err := c.List(ListQuery{Cursor: cursor(long)})
	assert.NoError(t, err, "a name of 128 bytes")
	_, err = c.List(ListQuery{Cursor: cursor(long + "a")})
	assert.ErrorIs(t, err, ErrInvalidCursor, "a name of 129 bytes")
	for _, bad := range []string{"acme.A", "acme.a_b", "acme a"} {
		_, err = c.List(ListQuery{Cursor: cursor(bad)})
		assert.ErrorIs(t, err, ErrInvalidCursor, "%q is no name", bad)
	}
}

// Zero options mean the defaults; only negative ones are refused.
func TestOptionsValidateZeroAndNegative(t *testing.T) {
	assert.NoError(t, Options{}.Validate())
	assert.Error(t, Options{MaxSkillFiles: -1}.Validate())
	assert.Error(t, Options{MaxSkillBytes: -1}.Validate())
	assert.Error(t, Options{WatchDebounce: -1}.Validate())
}

// A namespace holds whole dotted prefixes only, whatever the lengths.
func TestInNamespaceLengths(t *testing.T) {
	assert.True(t, inNamespace("acme", "acme"))
	assert.True(t, inNamespace("acme.x", "acme"))
	assert.False(t, inNamespace("acmx", "acme"))
	assert.False(t, inNamespace("acm", "acme"))
	assert.False(t, inNamespace("acmex", "acme"))
}

// Count counts the packages with the given status, none when none has it.
func TestLoadReportCount(t *testing.T) {
	rep := LoadReport{Packages: []PackageReport{{Status: StatusLoaded}, {Status: StatusSkipped}, {Status: StatusLoaded}}}
	assert.Equal(t, 2, rep.Count(StatusLoaded))
	assert.Equal(t, 1, rep.Count(StatusSkipped))
	assert.Zero(t, LoadReport{}.Count(StatusLoaded))
}
