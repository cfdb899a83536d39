package sandbox

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// detach makes each of e's directories a detached read-only mount
// (open_tree), which a sandbox's set-up moves into its root: the sandbox's
// root user, an unprivileged host uid in root mode, need not reach the
// directory by path (under a private data directory), and a mount of
// another mount namespace cannot be bound. Only a privileged gateway may
// detach mounts (EPERM otherwise): nil files then, and the set-up binds by
// path, as the gateway's own user in rootless mode.
func (e Environment) detach() ([]*os.File, error) {
	for _, p := range e.Paths {
		if st, err := os.Stat(p); err != nil || !st.IsDir() {
			if err == nil {
				err = unix.ENOTDIR
			}
			return nil, fmt.Errorf("environment directory %s: %w", p, err)
		}
	}
	files := make([]*os.File, 0, len(e.Paths))
	for _, p := range e.Paths {
		fd, err := unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if errors.Is(err, unix.EPERM) && len(files) == 0 {
			return nil, nil
		}
		if err == nil {
			attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
			if err = unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, attr); err != nil {
				_ = unix.Close(fd)
			}
		}
		if err != nil {
			closeFiles(files)
			return nil, fmt.Errorf("environment directory %s: %w", p, err)
		}
		files = append(files, os.NewFile(uintptr(fd), p))
	}
	return files, nil
}

// passEnvironment adds e's detached directories to a child's extra files
// (numbered from 3), returning their numbers in the child (none: bind by
// path) and the files to close once it started.
func passEnvironment(e Environment, extra *[]*os.File) (fds []int, files []*os.File, err error) {
	files, err = e.detach()
	if err != nil {
		return nil, nil, err
	}
	for _, f := range files {
		fds = append(fds, 3+len(*extra))
		*extra = append(*extra, f)
	}
	return fds, files, nil
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}
