package blob

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/internal/testchild"
)

const crashHelperEnv = "SKILLGATE_BLOB_CRASH_HELPER_DIR"

// tempFiles lists leftover temp files of a store.
func tempFiles(t *testing.T, s *FSStore) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(s.objects, "*", tmpPrefix+"*"))
	require.NoError(t, err)
	return m
}

func openFS(t *testing.T, dir string, opts FSOptions) *FSStore {
	t.Helper()
	opts.Dir = dir
	s, err := OpenFSStore(opts)
	require.NoError(t, err)
	return s
}

func TestFSStorePersists(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openFS(t, dir, FSOptions{})
	id := s.NewID()
	info, err := s.Put(ctx, id, PutOptions{Kind: "application/json"}, strings.NewReader(`{"a":1}`))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	_, err = s.Put(ctx, s.NewID(), PutOptions{Kind: "text/plain"}, strings.NewReader("x"))
	assert.ErrorIs(t, err, ErrStoreClosed)

	s = openFS(t, dir, FSOptions{})
	defer s.Close()
	got, err := s.Stat(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, info.ID, got.ID)
	assert.Equal(t, info.SHA256, got.SHA256)
	assert.True(t, info.Created.Equal(got.Created))
	assert.Equal(t, `{"a":1}`, string(readAll(t, s, id)))

	_, file := s.path(id)
	head, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(head), "SKILLGATE-BLOB 1\n{"), "the header is readable text")
}

func TestFSStoreLock(t *testing.T) {
	dir := t.TempDir()
	s := openFS(t, dir, FSOptions{})
	_, err := OpenFSStore(FSOptions{Dir: dir})
	assert.ErrorIs(t, err, ErrStoreLocked)
	require.NoError(t, s.Close())
	s = openFS(t, dir, FSOptions{})
	require.NoError(t, s.Close())
}

// A blob file that is truncated, has a wrong header, or names another id
// is removed at open; files that are not ours are left alone.
func TestFSStoreRemovesCorruptFiles(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openFS(t, dir, FSOptions{})
	ids := []string{s.NewID(), s.NewID(), s.NewID(), s.NewID()}
	for _, id := range ids {
		_, err := s.Put(ctx, id, PutOptions{Kind: "text/plain"}, strings.NewReader(strings.Repeat("x", 1000)))
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())

	_, f0 := s.path(ids[0])
	require.NoError(t, os.Truncate(f0, headerSize+10)) // lost its tail
	_, f1 := s.path(ids[1])
	require.NoError(t, os.WriteFile(f1, []byte("garbage"), 0o600))
	_, f2 := s.path(ids[2])
	_, f3 := s.path(ids[3])
	data3, err := os.ReadFile(f3)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(f2, data3, 0o600)) // header names ids[3]
	foreign := filepath.Join(filepath.Dir(f0), "README")
	require.NoError(t, os.WriteFile(foreign, []byte("keep me"), 0o600))

	s = openFS(t, dir, FSOptions{})
	defer s.Close()
	for _, id := range ids[:3] {
		_, err := s.Stat(ctx, id)
		assert.ErrorIs(t, err, ErrNotFound, id)
		_, file := s.path(id)
		assert.NoFileExists(t, file)
	}
	_, err = s.Stat(ctx, ids[3])
	assert.NoError(t, err)
	assert.FileExists(t, foreign)
	count, _ := s.Usage()
	assert.Equal(t, 1, count)
}

// A blob file deleted behind the store's back reads as not found.
func TestFSStoreFileRemovedExternally(t *testing.T) {
	s := openFS(t, t.TempDir(), FSOptions{})
	defer s.Close()
	id := s.NewID()
	_, err := s.Put(context.Background(), id, PutOptions{Kind: "text/plain"}, strings.NewReader("x"))
	require.NoError(t, err)
	_, file := s.path(id)
	require.NoError(t, os.Remove(file))
	_, err = s.Open(context.Background(), id)
	assert.ErrorIs(t, err, ErrNotFound)
	count, _ := s.Usage()
	assert.Zero(t, count)
}

func TestFSStoreJanitor(t *testing.T) {
	clock := newFakeClock()
	s := openFS(t, t.TempDir(), FSOptions{TTL: time.Minute, SweepInterval: 10 * time.Millisecond, Now: clock.Now, Logger: zerolog.Nop()})
	defer s.Close()
	id := s.NewID()
	_, err := s.Put(context.Background(), id, PutOptions{Kind: "text/plain"}, strings.NewReader("x"))
	require.NoError(t, err)
	clock.Advance(2 * time.Minute)
	require.Eventually(t, func() bool {
		_, err := s.Stat(context.Background(), id)
		return err != nil
	}, 10*time.Second, 10*time.Millisecond)
	_, file := s.path(id)
	assert.NoFileExists(t, file)
}

// A writer killed in the middle of a Put leaves a temp file and no blob;
// the next open removes the temp file and the blob does not exist.
func TestFSStoreCrashMidWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	id := testchild.KillWhenReady(t, crashHelperEnv, dir)

	probe := &FSStore{objects: filepath.Join(dir, objectsDir)}
	left := tempFiles(t, probe)
	require.Len(t, left, 1, "the killed write left its temp file")
	fi, err := os.Stat(left[0])
	require.NoError(t, err)
	assert.Greater(t, fi.Size(), int64(headerSize), "the crash came after content was written")

	s := openFS(t, dir, FSOptions{})
	defer s.Close()
	_, err = s.Stat(context.Background(), id)
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = s.Open(context.Background(), id)
	assert.ErrorIs(t, err, ErrNotFound)
	assert.Empty(t, tempFiles(t, s), "temp files are removed at open")
	count, _ := s.Usage()
	assert.Zero(t, count)
}

// stallingReader yields chunks, then reports readiness and blocks for
// ever: the process is killed mid-write.
type stallingReader struct {
	chunks int
	ready  func()
}

func (r *stallingReader) Read(p []byte) (int, error) {
	if r.chunks == 0 {
		r.ready()
		for {
			time.Sleep(time.Hour) // a sleeper, unlike select{}, is no deadlock to the runtime
		}
	}
	r.chunks--
	for i := range p {
		p[i] = 'z'
	}
	return len(p), nil
}

// crashHelper runs in the child of TestFSStoreCrashMidWrite.
func crashHelper(dir string) {
	s, err := OpenFSStore(FSOptions{Dir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	id := s.NewID()
	fmt.Printf("id %s\n", id)
	_, _ = s.Put(context.Background(), id, PutOptions{Kind: "text/plain"}, &stallingReader{chunks: 8, ready: func() {
		fmt.Println("ready")
		_ = os.Stdout.Sync()
	}})
	_, _ = io.WriteString(os.Stderr, "crash helper: Put returned\n")
	os.Exit(3)
}

// Temp files of object writes a crash interrupted go at open; the objects
// stay.
func TestFSStoreRemovesObjectTemps(t *testing.T) {
	dir := t.TempDir()
	s := openFS(t, dir, FSOptions{})
	require.NoError(t, s.Objects().PutObject(context.Background(), "runs/r1/record", strings.NewReader("kept")))
	require.NoError(t, s.Close())
	stale := filepath.Join(dir, objectsKVDir, "runs", "r1", tmpPrefix+"123")
	require.NoError(t, os.WriteFile(stale, []byte("half"), 0o600))

	s = openFS(t, dir, FSOptions{})
	defer s.Close()
	assert.NoFileExists(t, stale)
	list, err := s.Objects().ListObjects(context.Background(), "runs/")
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "runs/r1/record", list[0].Key)
}
