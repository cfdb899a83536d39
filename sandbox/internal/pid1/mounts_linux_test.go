package pid1

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

const remountChildEnv = "PID1_TEST_REMOUNT_DIR"

// On a kernel without mount_setattr (before 5.12) a mount is made
// read-only, nosuid and nodev by a bind remount that carries over the
// flags it already had (noexec, noatime): a remount that dropped them
// would be refused for a locked mount, and would clear them otherwise.
// The mount is made in a user and mount namespace of a child's own.
func TestRemountReadOnlyWithoutMountSetattr(t *testing.T) {
	if dir := os.Getenv(remountChildEnv); dir != "" {
		mountSetattr = func(int, string, uint, *unix.MountAttr) error { return unix.ENOSYS }
		var st unix.Statfs_t
		err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
		if err == nil {
			err = unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOEXEC|unix.MS_NOATIME, "size=64k")
		}
		if err == nil {
			err = remountReadOnly(dir, false)
		}
		if err == nil {
			err = unix.Statfs(dir, &st)
		}
		if err != nil {
			fmt.Println("error", err)
			return
		}
		fmt.Println("flags", st.Flags)
		return
	}

	out := inOwnNamespaces(t, "TestRemountReadOnlyWithoutMountSetattr", remountChildEnv, t.TempDir(), syscall.CLONE_NEWNS)
	line, _, _ := strings.Cut(string(out), "\n")
	value, ok := strings.CutPrefix(line, "flags ")
	require.True(t, ok, "%q", out)
	flags, err := strconv.ParseInt(value, 10, 64)
	require.NoError(t, err)
	for name, f := range map[string]int64{"read-only": unix.ST_RDONLY, "nosuid": unix.ST_NOSUID, "nodev": unix.ST_NODEV,
		"noexec, carried over": unix.ST_NOEXEC, "noatime, carried over": unix.ST_NOATIME} {
		assert.NotZero(t, flags&f, name)
	}
}

// A tmpfs gets an inode per 4 KiB of its size, and at least 1024.
func TestTmpfsOpts(t *testing.T) {
	assert.Equal(t, "size=67108864,nr_inodes=16384,mode=1777", tmpfsOpts(64<<20, "mode=1777"))
	assert.Equal(t, "size=4194304,nr_inodes=1024,mode=0755", tmpfsOpts(4<<20, "mode=0755"))
	assert.Equal(t, "size=4198400,nr_inodes=1025,x", tmpfsOpts(4<<20+4096, "x"))
	assert.Equal(t, "size=1048576,nr_inodes=1024,x", tmpfsOpts(1<<20, "x"))
}

// Environment directories come as paths, or as one detached mount each:
// a count that does not match is refused before anything is made.
func TestBindEnvironmentCounts(t *testing.T) {
	root := t.TempDir()
	err := bindEnvironment(root, []string{"/opt/a", "/opt/b"}, []int{7})
	assert.EqualError(t, err, "2 environment directories, 1 descriptors")
	assert.NoDirExists(t, filepath.Join(root, wire.EnvMount))

	require.NoError(t, bindEnvironment(root, nil, nil))
	assert.DirExists(t, filepath.Join(root, wire.EnvMount), "the mount point Landlock's rule needs, even empty")
}
