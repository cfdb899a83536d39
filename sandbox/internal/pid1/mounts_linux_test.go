package pid1

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
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

	cmd := exec.Command(os.Args[0], "-test.run=^TestRemountReadOnlyWithoutMountSetattr$")
	cmd.Env = append(os.Environ(), remountChildEnv+"="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	out, err := cmd.Output()
	require.NoError(t, err, "a child in namespaces of its own")
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
