package pid1

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// devices are bound from the host's /dev.
var devices = []string{"null", "zero", "full", "random", "urandom"}

// buildRoot makes a tmpfs root with read-only system directories, fresh
// /proc, a minimal /dev, size-limited /tmp and /workspace, the job and the
// runtime read-only, and pivots into it. The host's root is gone after.
func buildRoot(c *wire.InitConfig) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	r := c.RootDir
	steps := []struct {
		what string
		fn   func() error
	}{
		{"root tmpfs", func() error { return mountTmpfs(r, "size=1m,nr_inodes=512,mode=0755") }},
		{"/usr", func() error { return bindReadOnly("/usr", filepath.Join(r, "usr")) }},
		{"/bin, /lib ...", func() error { return linkUsrSiblings(r) }},
		{"/job", func() error { return bindReadOnly(c.JobDir, filepath.Join(r, "job")) }},
		{wire.SkillsMount, func() error { return os.Symlink(wire.SkillsTarget, filepath.Join(r, wire.SkillsMount)) }},
		{wire.BlobsMount, func() error { return os.Symlink(wire.BlobsTarget, filepath.Join(r, wire.BlobsMount)) }},
		{wire.LibMount, func() error { return bindReadOnly(c.LibDir, filepath.Join(r, wire.LibMount)) }},
		{wire.EnvMount, func() error { return bindEnvironment(r, c.EnvDirs, c.EnvFDs) }},
		{"/proc", func() error { return mountProc(filepath.Join(r, "proc")) }},
		{"/dev", func() error { return buildDev(filepath.Join(r, "dev"), c.TmpBytes) }},
		{"/etc", func() error { return bindReadOnly(c.EtcDir, filepath.Join(r, "etc")) }},
		{"/tmp", func() error {
			return mountTmpfs(filepath.Join(r, "tmp"), tmpfsOpts(c.TmpBytes, "mode=1777"))
		}},
		{wire.WorkspacePath, func() error {
			return mountTmpfs(filepath.Join(r, wire.WorkspacePath), tmpfsOpts(c.WorkspaceBytes,
				// Readable by pid 1's uid, the gateway's: with a
				// subordinate id range it does not own the run's files.
				fmt.Sprintf("mode=0755,uid=%d,gid=%d", wire.SandboxUID, wire.SandboxUID)))
		}},
		{"pivot_root", func() error { return pivot(r) }},
	}
	for _, s := range steps {
		if err := s.fn(); err != nil {
			return fmt.Errorf("sandbox root: %s: %w", s.what, err)
		}
	}
	// The root itself is read-only: nothing new can appear next to /tmp.
	return remountReadOnly("/", false)
}

// bindEnvironment makes wire.EnvMount, Landlock's rule for every environment,
// and mounts each environment directory there under its own name: the
// detached mount the host passed, or a bind of its path.
func bindEnvironment(r string, dirs []string, fds []int) error {
	if len(fds) != 0 && len(fds) != len(dirs) {
		return fmt.Errorf("%d environment directories, %d descriptors", len(dirs), len(fds))
	}
	if err := os.MkdirAll(filepath.Join(r, wire.EnvMount), 0o755); err != nil {
		return err
	}
	for i, d := range dirs {
		dst := filepath.Join(r, wire.EnvMount, filepath.Base(d))
		var err error
		if len(fds) == 0 {
			err = bindReadOnly(d, dst)
		} else if err = os.Mkdir(dst, 0o755); err == nil {
			err = unix.MoveMount(fds[i], "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
	}
	return nil
}

func tmpfsOpts(size int64, extra string) string {
	inodes := max(size/4096, 1024)
	return fmt.Sprintf("size=%d,nr_inodes=%d,%s", size, inodes, extra)
}

func mountTmpfs(dst, opts string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	return unix.Mount("tmpfs", dst, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts)
}

// bindReadOnly binds src (recursively) onto dst and makes every mount of
// it read-only, nosuid and nodev.
func bindReadOnly(src, dst string) error {
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	if st.IsDir() {
		err = os.MkdirAll(dst, 0o755)
	} else {
		err = touch(dst)
	}
	if err != nil {
		return err
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", src, err)
	}
	return remountReadOnly(dst, true)
}

// remountReadOnly uses mount_setattr (recursive, keeps locked flags) and
// falls back to a bind remount that carries the mount's locked flags over.
func remountReadOnly(dst string, recursive bool) error {
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	flags := 0
	if recursive {
		flags = unix.AT_RECURSIVE
	}
	err := mountSetattr(unix.AT_FDCWD, dst, uint(flags), attr)
	if !errors.Is(err, unix.ENOSYS) {
		return err
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dst, &st); err != nil {
		return err
	}
	locked := uintptr(0)
	for _, f := range []struct{ st, ms uintptr }{
		{unix.ST_NOEXEC, unix.MS_NOEXEC}, {unix.ST_NOATIME, unix.MS_NOATIME},
		{unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(st.Flags)&f.st != 0 {
			locked |= f.ms
		}
	}
	return unix.Mount("", dst, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|locked, "")
}

func linkUsrSiblings(r string) error {
	for _, name := range wire.UsrSiblings {
		host := "/" + name
		st, err := os.Lstat(host)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return err
		case st.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(host)
			if err != nil {
				return err
			}
			err = os.Symlink(target, filepath.Join(r, name))
			if err != nil {
				return err
			}
		case st.IsDir():
			if err := bindReadOnly(host, filepath.Join(r, name)); err != nil {
				return err
			}
		}
	}
	return nil
}

func mountProc(dst string) error {
	if err := os.MkdirAll(dst, 0o555); err != nil {
		return err
	}
	return unix.Mount("proc", dst, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
}

// buildDev makes a read-only tmpfs holding only the harmless devices
// (bound from the host: a user namespace cannot create device nodes) and a
// /dev/shm as large as /tmp, which POSIX semaphores (multiprocessing) need.
func buildDev(dst string, shmBytes int64) error {
	if err := mountTmpfs(dst, "size=64k,nr_inodes=64,mode=0755"); err != nil {
		return err
	}
	if err := mountTmpfs(filepath.Join(dst, "shm"), tmpfsOpts(shmBytes, "mode=1777")); err != nil {
		return err
	}
	for _, d := range devices {
		if err := touch(filepath.Join(dst, d)); err != nil {
			return err
		}
		if err := unix.Mount("/dev/"+d, filepath.Join(dst, d), "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind /dev/%s: %w", d, err)
		}
	}
	links := map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dst, name)); err != nil {
			return err
		}
	}
	return unix.Mount("", dst, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "")
}

func touch(p string) error {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// pivot makes r the root and detaches the host's root.
func pivot(r string) error {
	if err := unix.Chdir(r); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach old root: %w", err)
	}
	return unix.Chdir("/")
}

// landlockReadDirs are the directories Python may read.
func landlockReadDirs() []string {
	dirs := []string{"/usr", "/etc", "/job", wire.LibMount, wire.EnvMount, "/proc", "/dev"}
	for _, name := range wire.UsrSiblings {
		if st, err := os.Lstat("/" + name); err == nil && st.IsDir() {
			dirs = append(dirs, "/"+name)
		}
	}
	return dirs
}

// mountSetattr is mount_setattr(2); a test stands in a kernel without it.
var mountSetattr = unix.MountSetattr
