package sandbox

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/internal/runerror"
)

// treeOf lists dir's entries as "path mode" lines, and each file's content.
func treeOf(t *testing.T, dir string) (map[string]fs.FileMode, map[string]string) {
	t.Helper()
	modes, data := map[string]fs.FileMode{}, map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		st, err := os.Lstat(p)
		require.NoError(t, err)
		modes[filepath.ToSlash(rel)] = st.Mode()
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			data[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	}))
	return modes, data
}

// A job's skills go to skills/<name>/, its input blobs to blobs/<id
// without "blob:">, files 0644 and directories 0755 whatever the umask;
// a job with neither leaves the directory empty, and a file written
// twice is refused.
func TestWriteJobFiles(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)

	dir := t.TempDir()
	require.NoError(t, writeJobFiles(dir, &plan{job: Job{Code: "x"}}))
	modes, _ := treeOf(t, dir)
	assert.Empty(t, modes, "nothing to write")
	assert.NoError(t, writeJobFiles(filepath.Join(dir, "missing"), &plan{job: Job{Code: "x"}}), "nothing to write needs no directory")

	p := &plan{job: Job{
		Skills: []Skill{
			{Name: "acme.math", Files: []File{{Path: "skill.toml", Data: []byte("t")}, {Path: "code/deep/main.py", Data: []byte("m")}}},
			{Name: "pdf", Files: []File{{Path: "SKILL.md", Data: []byte("s")}}},
		},
		InputBlobs: []InputBlob{{ID: "blob:abc", Data: []byte("A")}, {ID: "plain", Data: nil}},
	}}
	require.NoError(t, writeJobFiles(dir, p))
	modes, data := treeOf(t, dir)
	assert.Equal(t, map[string]string{
		"skills/acme.math/skill.toml": "t", "skills/acme.math/code/deep/main.py": "m",
		"skills/pdf/SKILL.md": "s", "blobs/abc": "A", "blobs/plain": "",
	}, data)
	for p, m := range modes {
		if m.IsDir() {
			assert.Equal(t, fs.ModeDir|0o755, m, p)
		} else {
			assert.Equal(t, fs.FileMode(0o644), m, p)
		}
	}
	assert.Len(t, modes, 11, "5 files and skills, blobs, acme.math, code, deep, pdf")

	err := writeJobFiles(dir, p)
	assert.ErrorContains(t, err, "job dir:", "a file is written once")
	assert.ErrorIs(t, err, fs.ErrExist)

	skillsOnly := t.TempDir()
	require.NoError(t, writeJobFiles(skillsOnly, &plan{job: Job{Skills: p.job.Skills[1:]}}))
	assert.NoDirExists(t, filepath.Join(skillsOnly, "blobs"), "no input blobs, no blobs directory")
	blobsOnly := t.TempDir()
	require.NoError(t, writeJobFiles(blobsOnly, &plan{job: Job{InputBlobs: p.job.InputBlobs[:1]}}))
	assert.FileExists(t, filepath.Join(blobsOnly, "blobs", "abc"))
	assert.NoDirExists(t, filepath.Join(blobsOnly, "skills"))

	assert.Error(t, writeJobFiles(filepath.Join(dir, "missing"), p), "no job directory")
}

type recordingSink struct {
	got []OutputBlob
	err error
}

func (s *recordingSink) Output(b OutputBlob, r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	b.Data = data
	s.got = append(s.got, b)
	return s.err
}

// outputsIn makes a workspace whose .blobs holds the given files, 0, 1, ...
func outputsIn(t *testing.T, contents ...string) *os.Root {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, ".blobs"), 0o755))
	for i, c := range contents {
		require.NoError(t, os.WriteFile(filepath.Join(dir, ".blobs", strconv.Itoa(i)), []byte(c), 0o644))
	}
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = root.Close() })
	return root
}

// A run's output blobs are read whole, with their ids and kinds, into
// memory or through the sink; a file over the per-blob limit, files over
// the total together, a symlink or a missing file fail the run before a
// byte is read.
func TestCollectOutputs(t *testing.T) {
	recs := []blobRecord{{Index: 0, Kind: "text"}, {Index: 1, Kind: "json"}}
	ids := []string{"blob:a", "blob:b"}

	got, err := collectOutputs(outputsIn(t, "hello", "{}"), recs, ids, 5, 7, nil)
	require.NoError(t, err, "each at most 5 bytes, 7 together: exactly at both limits")
	assert.Equal(t, []OutputBlob{{ID: "blob:a", Kind: "text", Size: 5, Data: []byte("hello")}, {ID: "blob:b", Kind: "json", Size: 2, Data: []byte("{}")}}, got)

	got, err = collectOutputs(outputsIn(t, "hello", "{}"), recs, ids, 5, 0, nil)
	require.NoError(t, err, "a total of 0 is no total limit")
	assert.Len(t, got, 2)

	sink := &recordingSink{}
	got, err = collectOutputs(outputsIn(t, "hello", "{}"), recs, ids, 5, 7, sink)
	require.NoError(t, err)
	assert.Equal(t, []OutputBlob{{ID: "blob:a", Kind: "text", Size: 5, Data: []byte("hello")}, {ID: "blob:b", Kind: "json", Size: 2, Data: []byte("{}")}}, sink.got)
	assert.Nil(t, got[0].Data, "through a sink nothing stays in memory")
	assert.Equal(t, int64(5), got[0].Size)

	stop := errors.New("store full")
	_, err = collectOutputs(outputsIn(t, "hello", "{}"), recs, ids, 5, 7, &recordingSink{err: stop})
	assert.ErrorIs(t, err, stop)

	_, err = collectOutputs(outputsIn(t, "hello!", "{}"), recs, ids, 5, 0, nil)
	assert.EqualError(t, err, "output blob 0: 6 bytes exceed the limit of 5")

	sink = &recordingSink{}
	_, err = collectOutputs(outputsIn(t, "hello", "{}x"), recs, ids, 5, 7, sink)
	var re *RunError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, runerror.OutputTooLarge, re.Type)
	assert.Contains(t, re.Message, "the run's 2 output blobs hold 8 bytes together, more than the 7 bytes")
	assert.Empty(t, sink.got, "nothing is read once the total is over")

	ws := outputsIn(t, "hello")
	require.NoError(t, ws.Symlink("0", ".blobs/1"))
	_, err = collectOutputs(ws, recs, ids, 5, 0, nil)
	assert.ErrorContains(t, err, "output blob 1: .blobs/1 is not a regular file")

	_, err = collectOutputs(outputsIn(t, "hello"), recs, ids, 5, 0, nil)
	assert.ErrorContains(t, err, "output blob 1:")
}
