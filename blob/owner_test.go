package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestBlobOwners(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, 1<<20, 0, func(t *testing.T, s Store, _ *fakeClock) {
		id := s.NewID()
		info, err := s.Put(ctx, id, PutOptions{Kind: "text/plain", Owner: "alice"}, strings.NewReader("alice's"))
		require.NoError(t, err)
		assert.Equal(t, "alice", info.Owner)

		b, err := OpenOwned(ctx, s, id, "alice")
		require.NoError(t, err)
		require.NoError(t, b.Close())

		_, errOther := OpenOwned(ctx, s, id, "bob")
		require.ErrorIs(t, errOther, ErrNotFound)
		unknown := s.NewID()
		_, errUnknown := OpenOwned(ctx, s, unknown, "bob")
		assert.Equal(t, strings.ReplaceAll(errUnknown.Error(), unknown, id), errOther.Error(),
			"another owner's blob reads exactly like an unknown id")

		assert.Equal(t, int64(7), s.OwnerUsage("alice"))
		assert.Zero(t, s.OwnerUsage("bob"))
	})
}

func TestFSStoreOwnerPersists(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openFS(t, dir, FSOptions{})
	id := s.NewID()
	_, err := s.Put(ctx, id, PutOptions{Kind: "text/plain", Owner: "agent.main_1"}, strings.NewReader("data"))
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s = openFS(t, dir, FSOptions{})
	defer s.Close()
	info, err := s.Stat(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, "agent.main_1", info.Owner, "the owner survives a restart")
	assert.Equal(t, int64(4), s.OwnerUsage("agent.main_1"), "usage is rebuilt at open")
	_, err = OpenOwned(ctx, s, id, "anonymous")
	assert.ErrorIs(t, err, ErrNotFound)
}

// A blob file of an earlier version has no owner: it belongs to nobody
// who can ask for it by name.
func TestFSStoreBlobWithoutOwner(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openFS(t, dir, FSOptions{})
	id := s.NewID()
	_, err := s.Put(ctx, id, PutOptions{Kind: "text/plain"}, strings.NewReader("old"))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, file := s.path(id)
	head, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.NotContains(t, string(head[:headerSize]), "owner", "the header of an ownerless blob is the old format")

	s = openFS(t, dir, FSOptions{})
	defer s.Close()
	_, err = OpenOwned(ctx, s, id, "anonymous")
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestBlobQuotas(t *testing.T) {
	ctx := context.Background()
	for name, mk := range map[string]func(t *testing.T) Store{
		"mem": func(*testing.T) Store { return NewMemStore(MemOptions{MaxStoreBytes: 100}) },
		"fs":  func(t *testing.T) Store { return openFS(t, t.TempDir(), FSOptions{MaxStoreBytes: 100}) },
	} {
		t.Run(name, func(t *testing.T) {
			s := mk(t)
			defer s.Close()
			put := func(owner string, quota int64, n int) (string, error) {
				id := s.NewID()
				_, err := s.Put(ctx, id, PutOptions{Kind: "text/plain", Owner: owner, OwnerQuota: quota},
					bytes.NewReader(make([]byte, n)))
				return id, err
			}
			first, err := put("a", 50, 40)
			require.NoError(t, err)
			_, err = put("a", 50, 20)
			var se *StorageFullError
			require.ErrorAs(t, err, &se)
			assert.ErrorIs(t, err, ErrStorageFull)
			assert.Equal(t, StorageFullError{Reason: FullOwnerQuota, Limit: 50, Used: 40, Need: 20}, *se)
			assert.Contains(t, err.Error(), "this identity's blobs hold 40 of its 50 bytes")

			_, err = put("b", 0, 50)
			require.NoError(t, err, "another owner has its own quota")
			_, err = put("c", 0, 20)
			require.ErrorAs(t, err, &se)
			assert.Equal(t, FullStoreQuota, se.Reason)
			assert.Contains(t, err.Error(), "holds 90 of its 100 bytes")

			count, used := s.Usage()
			assert.Equal(t, 2, count, "refused blobs are not kept")
			assert.Equal(t, int64(90), used)
			assert.Equal(t, make([]byte, 40), readAll(t, s, first), "earlier blobs stay intact")

			require.NoError(t, s.Remove(ctx, first))
			assert.ErrorIs(t, s.Remove(ctx, first), ErrNotFound)
			assert.Zero(t, s.OwnerUsage("a"), "a removed blob frees its owner's quota")
			_, err = put("a", 50, 50)
			assert.NoError(t, err)
		})
	}
}

// A Put that fails leaves its bytes unaccounted: a failed write does not
// eat the quota.
func TestBlobQuotaReleasedOnFailure(t *testing.T) {
	forEachStore(t, 100, 0, func(t *testing.T, s Store, _ *fakeClock) {
		_, err := s.Put(context.Background(), s.NewID(), PutOptions{Kind: "text/plain", Owner: "a"}, bytes.NewReader(make([]byte, 101)))
		require.ErrorIs(t, err, ErrTooLarge)
		_, err = s.Put(context.Background(), s.NewID(), PutOptions{Kind: "text/plain", Owner: "a"}, &failingReader{n: 50})
		require.Error(t, err)
		assert.Zero(t, s.OwnerUsage("a"))
		_, used := s.Usage()
		assert.Zero(t, used)
	})
}

// mountTmpfs mounts a tmpfs of size bytes on a fresh folder, or skips
// when this process may not mount.
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// A real full disk: a small tmpfs as data folder.
func TestFSStoreDiskFull(t *testing.T) {
	dir := mountTmpfs(t, 256<<10)
	ctx := context.Background()
	s := openFS(t, dir, FSOptions{})
	var kept []string
	var full error
	for range 64 { // 64 × 16 KiB is four times the disk
		id := s.NewID()
		if _, err := s.Put(ctx, id, PutOptions{Kind: "text/plain", Owner: "a"}, bytes.NewReader(bytes.Repeat([]byte(id[5:9]), 4<<10))); err != nil {
			full = err
			break
		}
		kept = append(kept, id)
	}
	require.Error(t, full, "the disk filled up")
	var se *StorageFullError
	require.ErrorAs(t, full, &se, "%v", full)
	assert.Equal(t, FullDisk, se.Reason)
	assert.True(t, errors.Is(full, unix.ENOSPC))
	assert.NotContains(t, se.Error(), dir, "the client's text names no path")
	assert.Empty(t, tempFiles(t, s), "nothing half-written remains")
	count, _ := s.Usage()
	assert.Equal(t, len(kept), count)
	require.NoError(t, s.Close())

	s = openFS(t, dir, FSOptions{})
	defer s.Close()
	for _, id := range kept {
		assert.Equal(t, bytes.Repeat([]byte(id[5:9]), 4<<10), readAll(t, s, id), "earlier blobs stay intact")
	}
	require.NoError(t, s.Remove(ctx, kept[0]))
	_, err := s.Put(ctx, s.NewID(), PutOptions{Kind: "text/plain"}, strings.NewReader("room again"))
	assert.NoError(t, err, "freed space is usable")
}

const fdHelperEnv = "SKILLGATE_BLOB_FD_HELPER_DIR"

// fdHelper runs in the child of TestFSStoreOutOfDescriptors: it lowers its
// own RLIMIT_NOFILE to the descriptors it has, so the next Put cannot open
// its temp file, then raises it again and puts once more.
func fdHelper(dir string) {
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		os.Exit(2)
	}
	s, err := OpenFSStore(FSOptions{Dir: dir})
	if err != nil {
		fail("open: %v", err)
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		fail("getrlimit: %v", err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		fail("fds: %v", err)
	}
	highest := 0
	for _, f := range fds {
		var n int
		if _, err := fmt.Sscan(f.Name(), &n); err == nil && n > highest {
			highest = n
		}
	}
	low := lim
	low.Cur = uint64(highest + 1)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		fail("setrlimit: %v", err)
	}
	var fillers []*os.File // take every free number below the limit
	for range highest + 1 {
		f, err := os.Open(os.DevNull)
		if err != nil {
			break
		}
		fillers = append(fillers, f)
	}
	_, err = s.Put(context.Background(), s.NewID(), PutOptions{Kind: "text/plain"}, strings.NewReader("x"))
	var se *StorageFullError
	if !errors.As(err, &se) || se.Reason != FullFiles {
		fail("put without descriptors: want a StorageFullError for files, got %v", err)
	}
	for _, f := range fillers {
		_ = f.Close()
	}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		fail("setrlimit: %v", err)
	}
	if _, err := s.Put(context.Background(), s.NewID(), PutOptions{Kind: "text/plain"}, strings.NewReader("y")); err != nil {
		fail("put after: %v", err)
	}
	fmt.Println("ok", se.Error())
	os.Exit(0)
}

func TestFSStoreOutOfDescriptors(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fdHelperEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "ok the gateway is out of file descriptors")

	s := openFS(t, dir, FSOptions{})
	defer s.Close()
	count, _ := s.Usage()
	assert.Equal(t, 1, count, "only the Put after the shortage is kept")
	m, err := filepath.Glob(filepath.Join(dir, objectsDir, "*", tmpPrefix+"*"))
	require.NoError(t, err)
	assert.Empty(t, m)
}

// The header holds the owner next to the kind; a kind whose escaped form
// no longer fits is refused as a kind, and nothing remains.
func TestFSStoreHeaderOverflow(t *testing.T) {
	s := openFS(t, t.TempDir(), FSOptions{})
	defer s.Close()
	kind := `text/plain; a="` + strings.Repeat(`\"`, 55) + `"`
	norm, err := NormalizeKind(kind)
	require.NoError(t, err, "a valid kind")
	_, err = s.Put(context.Background(), s.NewID(), PutOptions{Kind: norm, Owner: strings.Repeat("o", 64)}, strings.NewReader("x"))
	require.ErrorIs(t, err, ErrInvalidKind)
	assert.Empty(t, tempFiles(t, s))
	count, used := s.Usage()
	assert.Zero(t, count)
	assert.Zero(t, used, "the admitted bytes are given back")
	_, err = s.Put(context.Background(), s.NewID(), PutOptions{Kind: norm, Owner: "anonymous"}, strings.NewReader("x"))
	assert.NoError(t, err, "with a short owner it fits")
}

// Concurrent Puts cannot together overshoot a quota: each admits its
// bytes under the index's lock before it becomes visible.
func TestBlobQuotaUnderConcurrency(t *testing.T) {
	forEachStore(t, 1<<20, 0, func(t *testing.T, s Store, _ *fakeClock) {
		const puts = 20
		errs := make(chan error, puts)
		for range puts {
			go func() {
				_, err := s.Put(context.Background(), s.NewID(), PutOptions{Kind: "text/plain", Owner: "a", OwnerQuota: 100},
					bytes.NewReader(make([]byte, 10)))
				errs <- err
			}()
		}
		ok := 0
		for range puts {
			if err := <-errs; err == nil {
				ok++
			} else {
				require.ErrorIs(t, err, ErrStorageFull)
			}
		}
		assert.Equal(t, 10, ok)
		assert.Equal(t, int64(100), s.OwnerUsage("a"))
	})
}
