package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// openWorkDir makes dir, or accepts it as it is, only when no other user
// can change what it holds: every sandbox binds the Python runtime from
// it, so whoever may replace its entries may replace the code every run
// executes. dir itself must be a real directory (not a symbolic link)
// owned by the gateway's effective uid and writable by nobody else; the
// directories above it must belong to root or to that uid and be writable
// by nobody else unless sticky (as /tmp is), and a symbolic link on the way
// must belong to root or that uid. It never follows a link at dir.
func openWorkDir(dir string, mode os.FileMode) error {
	if err := checkWorkParents(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("work dir: %w", err)
	}
	// Mkdir does not follow a link at dir: a planted one makes it fail
	// with EEXIST, and the check below refuses it.
	if err := os.Mkdir(dir, mode); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("work dir: %w", err)
	}
	return checkWorkDir(dir)
}

// checkWorkDir checks dir itself, without following a link there.
func checkWorkDir(dir string) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("work dir: %w", err)
	}
	fix := "pick another with --sandbox-work-dir"
	euid := os.Geteuid()
	switch owner := ownerOf(st); {
	case st.Mode()&fs.ModeSymlink != 0:
		target, _ := os.Readlink(dir)
		return fmt.Errorf("%w: %s is a symbolic link (to %q, owned by %s), not a directory: remove it (rm %s) or %s",
			errUnsafeWorkDir, dir, target, describeUID(owner), dir, fix)
	case !st.IsDir():
		return fmt.Errorf("%w: %s is not a directory (owned by %s): remove it or %s", errUnsafeWorkDir, dir, describeUID(owner), fix)
	case owner != euid:
		return fmt.Errorf("%w: %s belongs to %s, not to the gateway's %s: that user could replace what every sandbox runs; "+
			"remove it (rm -rf %s) or %s", errUnsafeWorkDir, dir, describeUID(owner), describeUID(euid), dir, fix)
	case st.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%w: %s (mode %v) is writable by group or others: chmod go-w %s, or %s",
			errUnsafeWorkDir, dir, st.Mode().Perm(), dir, fix)
	}
	return nil
}

// checkWorkParents checks the directories above dir (those that exist),
// as written and with their links resolved.
func checkWorkParents(dir string) error {
	parent := filepath.Dir(filepath.Clean(dir))
	paths := ancestors(parent)
	if real, err := filepath.EvalSymlinks(parent); err == nil && real != parent {
		paths = append(paths, ancestors(real)...)
	}
	euid, egid := os.Geteuid(), os.Getegid()
	for _, p := range paths {
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // made below by MkdirAll, as the gateway's own
		}
		if err != nil {
			return fmt.Errorf("work dir %s: %w", dir, err)
		}
		owner := ownerOf(st)
		if owner != 0 && owner != euid {
			return fmt.Errorf("%w: %s is inside %s, which belongs to %s: that user could replace it; pick another with --sandbox-work-dir",
				errUnsafeWorkDir, dir, p, describeUID(owner))
		}
		if !st.IsDir() || st.Mode()&fs.ModeSticky != 0 {
			continue
		}
		gid := int(st.Sys().(*syscall.Stat_t).Gid)
		if st.Mode().Perm()&0o002 != 0 || (st.Mode().Perm()&0o020 != 0 && gid != 0 && gid != egid) {
			return fmt.Errorf("%w: %s is inside %s (mode %v), which others may write to: chmod go-w %s, or pick another with --sandbox-work-dir",
				errUnsafeWorkDir, dir, p, st.Mode().Perm(), p)
		}
	}
	return nil
}

// ancestors lists p and every directory above it, from the root down.
func ancestors(p string) []string {
	var out []string
	for ; ; p = filepath.Dir(p) {
		out = append([]string{p}, out...)
		if p == filepath.Dir(p) {
			return out
		}
	}
}

func ownerOf(st fs.FileInfo) int {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(sys.Uid)
	}
	return -1
}

// describeUID names a uid and, where the host knows it, its user.
func describeUID(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return fmt.Sprintf("uid %d (%s)", uid, u.Username)
	}
	return "uid " + strconv.Itoa(uid)
}
