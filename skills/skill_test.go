package skills

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadFilePaths(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, merge(actionPackage("pkg", "acme.read.x", "1.0.0"), map[string]string{"pkg/resources/a b.txt": "spaced"}))
	r, _ := newRegistry(t, Options{Dir: root})
	s, err := r.Catalog().Resolve("acme.read.x", "")
	require.NoError(t, err)

	ok := map[string]string{
		"code/main.py":       "code/main.py",
		"./code/main.py":     "code/main.py",
		"code/./main.py":     "code/main.py",
		"code//main.py":      "code/main.py",
		"SKILL.md":           "SKILL.md",
		"resources/a b.txt":  "resources/a b.txt",
		"resources/a b.txt/": "resources/a b.txt",
	}
	for in, want := range ok {
		_, info, err := s.ReadFile(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, info.Path, in)
	}
	refused := []string{
		"", "../x", "/etc/passwd", "code/../../x", "code/../main.py", "..", "a\\..\\b", "code\\main.py",
		"code/main.py\x00.txt", "\x00", ".", "./", "/", "//etc/passwd", "code/..",
	}
	for _, in := range refused {
		_, _, err := s.ReadFile(in)
		assert.ErrorIs(t, err, ErrPathRefused, "%q", in)
		_, err = s.Stat(in)
		assert.ErrorIs(t, err, ErrPathRefused, "%q", in)
	}
	for _, in := range []string{"code", "code/", "missing.txt", "CODE/main.py", "code/main.py/x"} {
		_, _, err := s.ReadFile(in)
		assert.ErrorIs(t, err, ErrFileNotFound, "%q", in)
	}
}

func TestSkillFiles(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, actionPackage("pkg", "acme.files.x", "1.0.0"))
	r, _ := newRegistry(t, Options{Dir: root})
	s, _ := r.Catalog().Resolve("acme.files.x", "")
	files := s.Files()
	require.Len(t, files, 4)
	var total int64
	for i, f := range files {
		if i > 0 {
			assert.Less(t, files[i-1].Path, f.Path, "sorted by path")
		}
		data, info, err := s.ReadFile(f.Path)
		require.NoError(t, err)
		assert.Equal(t, f, info)
		assert.Equal(t, sha(data), f.SHA256)
		total += f.Size
	}
	assert.Equal(t, total, s.TotalBytes())
	fd := s.FileData()
	require.Len(t, fd, 4)
	assert.Equal(t, files[0], fd[0].FileInfo)
	assert.Equal(t, "A test skill.", s.ShortDescription)
	assert.Equal(t, []string{"test"}, s.Tags)
	assert.Equal(t, "acme", s.Namespace)
	assert.Equal(t, SourcePackage, s.Source)
	assert.Contains(t, s.Body, "Body.")
	assert.NotContains(t, s.Body, "short_description")
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
