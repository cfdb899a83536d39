package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// envMount holds a run's Python environments, one read-only directory
// each, named after the host directory (a content address): the same
// environment lies at the same path in every run, whatever it is combined
// with. The template binds them at the same place in its own mount
// namespace, so what it preloads has the paths it has in a run.
const envMount = "/opt/env"

// Bounds of an Environment.
const (
	maxEnvPaths   = 8
	maxEnvPreload = 32
)

// inRunPaths are e's directories as the run sees them, in search order.
func (e Environment) inRunPaths() []string {
	out := make([]string, len(e.Paths))
	for i, p := range e.Paths {
		out[i] = path.Join(envMount, filepath.Base(p))
	}
	return out
}

// validate checks what a Job or Config brings: absolute, clean host
// directories with distinct names that are safe path segments, dotted
// module names, and a Key exactly when there is something to key.
func (e Environment) validate() error {
	if (e.Key == "") != (len(e.Paths) == 0 && len(e.Preload) == 0) {
		return fmt.Errorf("environment: a key is required exactly when paths or preload are given")
	}
	if len(e.Key) > 128 || !printableASCII(e.Key) {
		return fmt.Errorf("environment: key must be at most 128 printable ASCII bytes")
	}
	if len(e.Paths) > maxEnvPaths {
		return fmt.Errorf("environment: more than %d directories", maxEnvPaths)
	}
	names := make(map[string]bool, len(e.Paths))
	for _, p := range e.Paths {
		name := filepath.Base(p)
		switch {
		case !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/":
			return fmt.Errorf("environment: directory %q is not a clean absolute path", p)
		case checkFilePath(name) != nil || strings.HasPrefix(name, "."):
			return fmt.Errorf("environment: directory %q: its name is no safe path segment", p)
		case names[name]:
			return fmt.Errorf("environment: two directories named %q", name)
		}
		names[name] = true
	}
	if len(e.Preload) > maxEnvPreload {
		return fmt.Errorf("environment: more than %d preloaded modules", maxEnvPreload)
	}
	for _, m := range e.Preload {
		for _, part := range strings.Split(m, ".") {
			if err := checkIdentifier(part); err != nil {
				return fmt.Errorf("environment: preload %q: %w", m, err)
			}
		}
	}
	return nil
}

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
