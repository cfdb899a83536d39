package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nobody is the uid another local user's planted paths get.
const nobody = 65534

// TestPlantedWorkDirIsRefused plants the work directory before the gateway
// starts: as another user's directory, as a symbolic link to a directory,
// and inside another user's directory. Whoever controls it could replace
// the runtime every sandbox executes, in every mode: New refuses it and
// says which path, whose it is and how to fix it.
func TestPlantedWorkDirIsRefused(t *testing.T) {
	// Not t.TempDir: in root mode the sandboxes' uids traverse the work
	// dir's parents, and t.TempDir's own parent is private.
	base, err := os.MkdirTemp("", "skillgate-workdir-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	require.NoError(t, os.Chmod(base, 0o755))
	elsewhere := filepath.Join(base, "elsewhere")
	require.NoError(t, os.Mkdir(elsewhere, 0o755))
	type plant struct {
		name string
		make func(dir string) error
		want []string
	}
	plants := []plant{{
		name: "symlink",
		make: func(dir string) error { return os.Symlink(elsewhere, dir) },
		want: []string{"is a symbolic link", elsewhere, "--sandbox-work-dir"},
	}}
	if os.Geteuid() == 0 {
		plants = append(plants, plant{
			name: "another user's directory",
			make: func(dir string) error {
				if err := os.Mkdir(dir, 0o755); err != nil {
					return err
				}
				return os.Chown(dir, nobody, nobody)
			},
			want: []string{"belongs to uid 65534", "not to the gateway's uid 0", "rm -rf", "--sandbox-work-dir"},
		}, plant{
			name: "another user's symlink",
			make: func(dir string) error {
				if err := os.Symlink(elsewhere, dir); err != nil {
					return err
				}
				return os.Lchown(dir, nobody, nobody)
			},
			want: []string{"is a symbolic link", "owned by uid 65534"},
		}, plant{
			name: "inside another user's directory",
			make: func(dir string) error {
				parent := filepath.Dir(dir)
				if err := os.Mkdir(parent, 0o755); err != nil {
					return err
				}
				return os.Chown(parent, nobody, nobody)
			},
			want: []string{"which belongs to uid 65534", "--sandbox-work-dir"},
		})
	}
	for i, p := range plants {
		t.Run(p.name, func(t *testing.T) {
			dir := filepath.Join(base, string(rune('a'+i)), "skillgate-sandbox")
			if p.name != "inside another user's directory" {
				require.NoError(t, os.Mkdir(filepath.Dir(dir), 0o755))
			}
			require.NoError(t, p.make(dir))
			cfg := testConfig()
			cfg.WarmPool = 0
			cfg.WorkDir = dir
			r, err := New(cfg)
			if err == nil {
				_ = r.Close()
			}
			require.Error(t, err)
			assert.ErrorContains(t, err, dir)
			for _, w := range p.want {
				assert.ErrorContains(t, err, w)
			}
			entries, _ := os.ReadDir(elsewhere)
			assert.Empty(t, entries, "nothing was made through the link")
		})
	}
}
