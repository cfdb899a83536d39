package pid1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// openInherited opens two descriptors without close-on-exec, lower first.
func openInherited(t *testing.T) (low, high int) {
	t.Helper()
	var fds [2]int
	for i := range fds {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY, 0)
		require.NoError(t, err)
		t.Cleanup(func() { _ = unix.Close(fd) })
		fds[i] = fd
	}
	return min(fds[0], fds[1]), max(fds[0], fds[1])
}

func closeOnExec(t *testing.T, fd int) bool {
	t.Helper()
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	require.NoError(t, err)
	return flags&unix.FD_CLOEXEC != 0
}

// Every descriptor from first on is marked close-on-exec, and none below
// it: with close_range(2), and by listing /proc/self/fd on a kernel
// without it (before 5.11).
func TestCloseOnExecFrom(t *testing.T) {
	for _, name := range []string{"close_range", "without close_range"} {
		t.Run(name, func(t *testing.T) {
			if name != "close_range" {
				closeRange = func(uint, uint, uint) error { return unix.ENOSYS }
				t.Cleanup(func() { closeRange = unix.CloseRange })
			}
			low, high := openInherited(t)
			require.NoError(t, closeOnExecFrom(high))
			assert.False(t, closeOnExec(t, low), "below first")
			assert.True(t, closeOnExec(t, high), "first")
		})
	}
}
