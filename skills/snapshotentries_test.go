package skills

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// snapshotPaths returns the paths of the skill's files.
func snapshotPaths(s *Skill) []string {
	var out []string
	for _, f := range s.Files() {
		out = append(out, f.Path)
	}
	return out
}

// Files and folders whose names are no UTF-8 or hold a backslash are left
// out with one warning each (a folder's content unread); their neighbours
// are read.
func TestUnusableFileNames(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, merge(actionPackage("pkg", "acme.names.x", "1.0.0"), map[string]string{
		"pkg/a\\b.txt":       "x",
		"pkg/bad\xffname":    "x",
		"pkg/dir\\x/in.txt":  "x",
		"pkg/dir\\x/in2.txt": "x",
		"pkg/zz.txt":         "z",
	}))
	r, _ := newRegistry(t, Options{Dir: root})
	p := reportFor(t, lastReport(t, r), "pkg")
	assert.Equal(t, StatusLoaded, p.Status)
	require.Len(t, p.Warnings, 3, "%v", p.Warnings)
	for _, w := range p.Warnings {
		assert.Equal(t, "a UTF-8 file name without backslashes", w.Expected)
		assert.Equal(t, "skipped: unusable file name", w.Message)
	}
	s, err := r.Catalog().Resolve("acme.names.x", "")
	require.NoError(t, err)
	assert.Equal(t, []string{"SKILL.md", "code/main.py", "code/ops.py", "skill.toml", "zz.txt"}, snapshotPaths(s))
}

// A named pipe is no regular file: it is left out with a warning, and a
// symlink to it is refused, never opened (which would block).
func TestNamedPipeSkipped(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, actionPackage("pkg", "acme.fifo.x", "1.0.0"))
	pipe := filepath.Join(root, "pkg", "pipe")
	require.NoError(t, syscall.Mkfifo(pipe, 0o600))
	require.NoError(t, os.Symlink("pipe", filepath.Join(root, "pkg", "pipe-link")))

	r, _ := newRegistry(t, Options{Dir: root})
	p := reportFor(t, lastReport(t, r), "pkg")
	assert.Equal(t, StatusLoaded, p.Status)
	var msgs []string
	for _, w := range p.Warnings {
		msgs = append(msgs, w.File+": "+w.Message)
	}
	assert.ElementsMatch(t, []string{"pipe: skipped: not a regular file", "pipe-link: symlink skipped: target is not a regular file"}, msgs)

	s, err := r.Catalog().Resolve("acme.fifo.x", "")
	require.NoError(t, err)
	_, _, err = s.ReadFile("pipe-link")
	assert.ErrorIs(t, err, ErrPathRefused)
	_, _, err = s.ReadFile("pipe")
	assert.ErrorIs(t, err, ErrFileNotFound)
	assert.NotContains(t, snapshotPaths(s), "pipe")
}

// The limits' violations say the limit and what was found: the file that
// would be one too many, more bytes than allowed.
func TestSnapshotLimitViolations(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"lim/SKILL.md": limitsSkillMD, "lim/a.txt": "a", "lim/b.txt": "b", "lim/c.txt": "c",
	})
	r, _ := newRegistry(t, Options{Dir: root, MaxSkillFiles: 3})
	p := reportFor(t, lastReport(t, r), "lim")
	require.Len(t, p.Violations, 1)
	assert.Equal(t, Violation{Field: "/files", Expected: "at most 3 files", Actual: 4, Message: "too many files in the package"}, p.Violations[0])

	root = t.TempDir()
	writeTree(t, root, map[string]string{
		"lim/SKILL.md": limitsSkillMD, "lim/a.txt": strings.Repeat("a", 600), "lim/b.txt": strings.Repeat("b", 600),
	})
	r, _ = newRegistry(t, Options{Dir: root, MaxSkillBytes: 1000})
	p = reportFor(t, lastReport(t, r), "lim")
	require.Len(t, p.Violations, 1)
	assert.Equal(t, Violation{Field: "/size_bytes", Expected: "at most 1000 bytes in total", Actual: "more than 1000", Message: "package too large"}, p.Violations[0])
}

// The parsed version of a snapshot is the manifest's.
func TestSkillSemVer(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, actionPackage("pkg", "acme.ver.x", "1.2.3-rc.1+b7"))
	r, _ := newRegistry(t, Options{Dir: root})
	s, err := r.Catalog().Resolve("acme.ver.x", "")
	require.NoError(t, err)
	v := s.SemVer()
	assert.Equal(t, "1.2.3-rc.1+b7", v.String())
	assert.True(t, v.IsPrerelease())
	assert.Equal(t, uint64(2), v.Minor)
}
