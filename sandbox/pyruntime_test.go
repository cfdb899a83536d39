package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The embedded runtime is written whole under the directory, its files
// 0644 and its directories 0755 whatever the umask: the sandbox user must
// read them.
func TestInstallRuntime(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := t.TempDir()
	require.NoError(t, installRuntime(dir))
	files := 0
	require.NoError(t, fs.WalkDir(pyRuntime, ".", func(name string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		st, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err, name)
		if d.IsDir() {
			assert.True(t, st.IsDir(), name)
			assert.Equal(t, fs.FileMode(0o755), st.Mode().Perm(), name)
			return nil
		}
		files++
		want, err := pyRuntime.ReadFile(name)
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), name)
		assert.Equal(t, fs.FileMode(0o644), st.Mode().Perm(), name)
		return nil
	}))
	assert.FileExists(t, filepath.Join(dir, "runtime", "_boot.py"))
	assert.Greater(t, files, 1)

	assert.Error(t, installRuntime(filepath.Join(dir, "runtime", "_boot.py")), "a file where a directory must go")
}
