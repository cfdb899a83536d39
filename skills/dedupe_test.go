package skills

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two folders serving the same (name, version): the first in folder
// order is served and warned, the other skipped with a /version violation
// naming the winner; the same name at another version is served beside
// them, and each status is logged.
func TestDuplicateNameVersionSkipsLaterFolder(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, merge(
		actionPackage("a", "acme.dup.x", "1.0.0"),
		actionPackage("b", "acme.dup.x", "1.0.0"),
		actionPackage("c", "acme.dup.x", "2.0.0"),
		actionPackage("d", "acme.dup.x", "1.0.0"),
	))
	r, logs := newRegistry(t, Options{Dir: root})
	rep := lastReport(t, r)
	a, b, c, d := reportFor(t, rep, "a"), reportFor(t, rep, "b"), reportFor(t, rep, "c"), reportFor(t, rep, "d")
	assert.Equal(t, StatusLoaded, a.Status)
	assert.Equal(t, StatusSkipped, b.Status)
	assert.Equal(t, StatusLoaded, c.Status)
	assert.Equal(t, StatusSkipped, d.Status)
	assert.Empty(t, c.Warnings)
	assert.Empty(t, c.Violations)
	assert.Equal(t, 2, rep.Count(StatusLoaded))
	assert.Equal(t, 2, rep.Count(StatusSkipped))

	for _, loser := range []PackageReport{b, d} {
		require.Len(t, loser.Violations, 1, loser.Dir)
		v := loser.Violations[0]
		assert.Equal(t, "/version", v.Field)
		assert.Equal(t, "1.0.0", v.Actual)
		assert.Equal(t, "duplicate of acme.dup.x 1.0.0 served from "+a.Dir, v.Message)
	}
	require.Len(t, a.Warnings, 2, "one warning per skipped duplicate")
	assert.Equal(t, "also defined in "+b.Dir+", which is skipped", a.Warnings[0].Message)
	assert.Equal(t, "also defined in "+d.Dir+", which is skipped", a.Warnings[1].Message)

	s, err := r.Catalog().Resolve("acme.dup.x", "1.0.0")
	require.NoError(t, err)
	assert.Equal(t, a.Dir, s.Dir)
	assert.Equal(t, []string{"2.0.0", "1.0.0"}, r.Catalog().Versions("acme.dup.x"))
	// Two loads so far (the registry's first and lastReport's).
	assert.Len(t, logLines(t, logs, "skill package loaded with warnings"), 2)
	assert.Len(t, logLines(t, logs, "skill package invalid, skipped"), 4)
}

// A reload that finds a folder unchanged serves the very same snapshot
// value; a changed file gives a new one.
func TestReloadUnchangedKeepsSnapshotValue(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, actionPackage("f", "acme.same.x", "1.0.0"))
	r, _ := newRegistry(t, Options{Dir: root})
	v1, err := r.Catalog().Resolve("acme.same.x", "")
	require.NoError(t, err)
	lastReport(t, r)
	v2, err := r.Catalog().Resolve("acme.same.x", "")
	require.NoError(t, err)
	assert.Same(t, v1, v2)

	writeTree(t, root, map[string]string{"f/code/main.py": "def main(a):\n    return {}\n"})
	assert.Equal(t, StatusLoaded, reportFor(t, lastReport(t, r), "f").Status)
	v3, err := r.Catalog().Resolve("acme.same.x", "")
	require.NoError(t, err)
	assert.NotSame(t, v1, v3)
	assert.NotEqual(t, v1.Digest(), v3.Digest())
}

// A plainly loaded package logs at debug level with neither violations
// nor warnings; one with warnings only logs its warnings and no
// violations; a skipped one logs its violations and no warnings.
func TestLoadReportLogShape(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, merge(
		actionPackage("a", "acme.log.x", "1.0.0"),
		actionPackage("b", "acme.log.x", "1.0.0"),
		actionPackage("c", "acme.log.y", "1.0.0"),
	))
	_, logs := newRegistry(t, Options{Dir: root})
	plain := logLines(t, logs, "skill package loaded")
	require.Len(t, plain, 1)
	assert.Equal(t, "debug", plain[0]["level"])
	assert.Equal(t, "acme.log.y", plain[0]["name"])
	assert.NotContains(t, plain[0], "violations")
	assert.NotContains(t, plain[0], "warnings")

	warned := logLines(t, logs, "skill package loaded with warnings")
	require.Len(t, warned, 1)
	assert.Equal(t, "warn", warned[0]["level"])
	assert.Contains(t, warned[0], "warnings")
	assert.NotContains(t, warned[0], "violations")

	skipped := logLines(t, logs, "skill package invalid, skipped")
	require.Len(t, skipped, 1)
	assert.Contains(t, skipped[0], "violations")
	assert.NotContains(t, skipped[0], "warnings")

	summary := logLines(t, logs, "skill catalog loaded")
	require.Len(t, summary, 1)
	assert.EqualValues(t, 2, summary[0]["loaded"])
	assert.EqualValues(t, 1, summary[0]["skipped"])
	assert.EqualValues(t, 0, summary[0]["kept_previous"])
}
