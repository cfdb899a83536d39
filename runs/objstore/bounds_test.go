package objstore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/runs"
	"github.com/skillgate/skillgate/runs/objstore"
	"github.com/skillgate/skillgate/runs/runstest"
)

var errInjected = errors.New("injected object store failure")

// faultyObjects is a real object space (the memory store's) that counts
// the writes of each key and fails the writes or deletes of keys ending
// in a given name, as an object store that refuses them would.
type faultyObjects struct {
	blob.Objects

	mu         sync.Mutex
	puts       map[string]int
	failPut    string // a key ending in it fails to be written
	failDelete string // a key ending in it fails to be deleted
}

func newFaultyObjects(t *testing.T) *faultyObjects {
	return &faultyObjects{Objects: memObjects(t), puts: map[string]int{}}
}

func (f *faultyObjects) PutObject(ctx context.Context, key string, r io.Reader) error {
	f.mu.Lock()
	fail := f.failPut != "" && strings.HasSuffix(key, f.failPut)
	if !fail {
		f.puts[key]++
	}
	f.mu.Unlock()
	if fail {
		return errInjected
	}
	return f.Objects.PutObject(ctx, key, r)
}

func (f *faultyObjects) DeleteObject(ctx context.Context, key string) error {
	f.mu.Lock()
	fail := f.failDelete != "" && strings.HasSuffix(key, f.failDelete)
	f.mu.Unlock()
	if fail {
		return errInjected
	}
	return f.Objects.DeleteObject(ctx, key)
}

func (f *faultyObjects) fail(put, del string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failPut, f.failDelete = put, del
}

// writes is how many times a key ending in name was written.
func (f *faultyObjects) writes(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for k, c := range f.puts {
		if strings.HasSuffix(k, name) {
			n += c
		}
	}
	return n
}

// runKey is where the package keeps a run's object (see its doc): under
// runs/<first 16 bytes of the owner's SHA-256, hex>/<run id>/.
func runKey(owner, id, name string) string {
	sum := sha256.Sum256([]byte(owner))
	return "runs/" + hex.EncodeToString(sum[:16]) + "/" + id + "/" + name
}

// A running run's events are written again only when they changed since
// this store saved them; a finished run is forgotten, so that its next
// save writes them again.
func TestSaveWritesEventsOnce(t *testing.T) {
	obj := newFaultyObjects(t)
	s := objstore.New(obj)
	ctx := context.Background()
	rec := runstest.Record("alice", 2)
	rec.Status, rec.FinishedAt = runs.StatusRunning, time.Time{}
	require.NoError(t, s.Save(ctx, rec))
	require.NoError(t, s.Save(ctx, rec))
	assert.Equal(t, 1, obj.writes("/events"), "unchanged events are not written again")
	assert.Equal(t, 2, obj.writes("/record"))

	rec.Events = append(rec.Events, runs.Event{Seq: 3, Type: runs.EventLog, Data: []byte(`{"stream":"log","text":"3"}`)})
	require.NoError(t, s.Save(ctx, rec))
	assert.Equal(t, 2, obj.writes("/events"), "a new event is written")

	rec.Status = runs.StatusCompleted
	require.NoError(t, s.Save(ctx, rec))
	assert.Equal(t, 2, obj.writes("/events"), "finishing with the same events writes the record only")
	require.NoError(t, s.Save(ctx, rec))
	assert.Equal(t, 3, obj.writes("/events"), "a finished run is forgotten")
	got, err := s.Load(ctx, "alice", rec.ID)
	require.NoError(t, err)
	assert.Len(t, got.Events, 3)
	assert.Equal(t, runs.StatusCompleted, got.Status)
}

// A save whose record cannot be written fails, and the store does not
// take the events for saved: the next save writes them again.
func TestSaveRecordFails(t *testing.T) {
	obj := newFaultyObjects(t)
	s := objstore.New(obj)
	ctx := context.Background()
	rec := runstest.Record("alice", 1)
	rec.Status = runs.StatusRunning
	obj.fail("/record", "")
	err := s.Save(ctx, rec)
	require.ErrorIs(t, err, errInjected)
	_, err = s.Load(ctx, "alice", rec.ID)
	assert.ErrorIs(t, err, runs.ErrNotFound, "no record, no run")

	obj.fail("", "")
	require.NoError(t, s.Save(ctx, rec))
	assert.Equal(t, 2, obj.writes("/events"), "the events are written again with the record")
	_, err = s.Load(ctx, "alice", rec.ID)
	assert.NoError(t, err)
}

// Events a save cut short left without a record go in a sweep once as
// old as the cutoff, as a record does.
func TestSweepEventsWithoutRecord(t *testing.T) {
	obj := newFaultyObjects(t)
	s := objstore.New(obj)
	ctx := context.Background()
	rec := runstest.Record("alice", 1)
	obj.fail("/record", "")
	require.Error(t, s.Save(ctx, rec))
	obj.fail("", "")
	_, _, err := obj.GetObject(ctx, runKey("alice", rec.ID, "events"))
	require.NoError(t, err, "the events were written first")

	n, err := s.Sweep(ctx, time.Now().Add(-time.Hour), runs.Bounds{})
	require.NoError(t, err)
	assert.Zero(t, n, "younger than the cutoff")
	n, err = s.Sweep(ctx, time.Now().Add(time.Hour), runs.Bounds{})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	_, _, err = obj.GetObject(ctx, runKey("alice", rec.ID, "events"))
	assert.ErrorIs(t, err, blob.ErrObjectNotFound)
}

// A delete that the object store refuses fails, and the run stays: on the
// replica that saved it and on one that finds it by listing.
func TestDeleteFails(t *testing.T) {
	obj := newFaultyObjects(t)
	saver, other := objstore.New(obj), objstore.New(obj)
	ctx := context.Background()
	rec := runstest.Record("alice", 1)
	rec.Status = runs.StatusRunning
	require.NoError(t, saver.Save(ctx, rec))
	for _, name := range []string{"/events", "/record"} {
		obj.fail("", name)
		for _, s := range []*objstore.Store{saver, other} {
			assert.ErrorIs(t, s.Delete(ctx, rec.ID), errInjected, "%s refused", name)
			_, err := s.Load(ctx, "alice", rec.ID)
			require.NoError(t, err, "the record stays")
		}
	}
	obj.fail("", "")
	require.NoError(t, saver.Delete(ctx, rec.ID))
	_, err := other.Load(ctx, "alice", rec.ID)
	assert.ErrorIs(t, err, runs.ErrNotFound)

	obj.fail("", "/record")
	require.NoError(t, saver.Save(ctx, rec))
	n, err := other.Sweep(ctx, time.Now().Add(time.Hour), runs.Bounds{})
	assert.ErrorIs(t, err, errInjected, "a sweep reports what it could not delete")
	assert.Zero(t, n)
}

// A record or events object is read up to 64 MiB; one byte more is an
// error, not a truncated read.
func TestRecordSizeBound(t *testing.T) {
	obj := memObjects(t)
	s := objstore.New(obj)
	ctx := context.Background()
	const limit = 64 << 20
	id := runs.NewID()
	head := `{"run_id":"` + id + `","owner":"alice","what":"run_code","status":"completed"}`
	padded := func(n int) io.Reader {
		return io.MultiReader(strings.NewReader(head), bytes.NewReader(bytes.Repeat([]byte(" "), n-len(head))))
	}
	require.NoError(t, obj.PutObject(ctx, runKey("alice", id, "record"), padded(limit)))
	got, err := s.Load(ctx, "alice", id)
	require.NoError(t, err, "a record of exactly 64 MiB is read")
	assert.Equal(t, "run_code", got.What)

	require.NoError(t, obj.PutObject(ctx, runKey("alice", id, "record"), padded(limit+1)))
	_, err = s.Load(ctx, "alice", id)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "larger than 67108864 bytes")
	assert.NotErrorIs(t, err, runs.ErrNotFound)
}
