package runs

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failingStore is a MemoryStore whose operations fail on request.
type failingStore struct {
	*MemoryStore
	mu                   sync.Mutex
	failSave, failDelete bool
	loadRecs             []*Record
	loadErr              error
	deleted              []string
}

var errStore = errors.New("store unavailable")

func (f *failingStore) Save(ctx context.Context, rec *Record) error {
	f.mu.Lock()
	fail := f.failSave
	f.mu.Unlock()
	if fail {
		return errStore
	}
	return f.MemoryStore.Save(ctx, rec)
}

func (f *failingStore) Delete(ctx context.Context, id string) error {
	f.mu.Lock()
	f.deleted = append(f.deleted, id)
	fail := f.failDelete
	f.mu.Unlock()
	if fail {
		return errStore
	}
	return f.MemoryStore.Delete(ctx, id)
}

func (f *failingStore) LoadAll(ctx context.Context) ([]*Record, error) {
	if f.loadErr != nil {
		return f.loadRecs, f.loadErr
	}
	return f.MemoryStore.LoadAll(ctx)
}

// Open refuses a store it cannot read at all; a store that reads some
// records and fails on others opens with those, and the failure logged.
func TestOpenWithAStoreThatFails(t *testing.T) {
	_, err := Open(context.Background(), Config{Store: &failingStore{MemoryStore: NewMemoryStore(), loadErr: errStore}})
	assert.ErrorIs(t, err, errStore)

	now := time.Unix(1_700_000_000, 0)
	rec := &Record{ID: NewID(), Owner: "alice", What: "run_code", Status: StatusCompleted, StartedAt: now, FinishedAt: now,
		Result: json.RawMessage(`{"status":"completed"}`)}
	log, buf := warnLog()
	st := &failingStore{MemoryStore: NewMemoryStore(), loadRecs: []*Record{head(rec, 0)}, loadErr: errStore}
	require.NoError(t, st.MemoryStore.Save(context.Background(), rec))
	g, err := Open(context.Background(), Config{Store: st, Logger: log, Now: func() time.Time { return now }})
	require.NoError(t, err)
	r, err := g.Get("alice", rec.ID)
	require.NoError(t, err)
	assert.JSONEq(t, `{"status":"completed"}`, string(r.Object()))
	assert.Contains(t, buf.String(), `"level":"warn","error":"store unavailable","message":"some run records could not be read"`)
}

// A run that was in progress when the gateway stopped is reported
// interrupted even when its record cannot be saved again; the failure is
// logged.
func TestOpenInterruptedRunSaveFails(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	st := &failingStore{MemoryStore: NewMemoryStore()}
	id := NewID()
	require.NoError(t, st.MemoryStore.Save(context.Background(), &Record{ID: id, Owner: "alice", What: "run_code",
		Status: StatusRunning, StartedAt: now.Add(-time.Minute),
		Events: []Event{{Seq: 7, Type: EventBlob, Data: json.RawMessage(`{}`)}}}))
	st.failSave = true
	log, buf := warnLog()
	g := open(t, Config{Store: st, Logger: log, Now: func() time.Time { return now }})
	r, err := g.Get("alice", id)
	require.NoError(t, err)
	var obj struct {
		Status     string `json:"status"`
		DurationMS int64  `json:"duration_ms"`
		Error      struct{ Type string }
	}
	require.NoError(t, json.Unmarshal(r.Object(), &obj))
	assert.Equal(t, StatusFailed, obj.Status)
	assert.Equal(t, "INTERRUPTED", obj.Error.Type)
	assert.Equal(t, int64(60_000), obj.DurationMS)
	assert.Contains(t, buf.String(), `"run_id":"`+id+`","message":"cannot save the interrupted run"`)
	evs := collect(t, r, 0)
	require.Len(t, evs, 3)
	assert.Equal(t, Event{Seq: 8, Type: EventFinished, Data: json.RawMessage(`{"status":"failed"}`)}, evs[2],
		"finished follows the last event it kept")
}

// Failures to save or delete a record are logged, and the registry goes
// on from memory.
func TestStoreFailuresLogged(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	st := &failingStore{MemoryStore: NewMemoryStore(), failSave: true, failDelete: true}
	log, buf := warnLog()
	g := open(t, Config{Store: st, Logger: log, Now: func() time.Time { return now }, Retention: time.Minute})

	r := g.Start(NewID(), "alice", "run_code", "", nil)
	assert.Contains(t, buf.String(), `"run_id":"`+r.ID()+`","message":"cannot save a run record"`)
	buf.Reset()
	g.Discard(r)
	assert.Contains(t, buf.String(), `"run_id":"`+r.ID()+`","message":"cannot delete a run record"`)
	_, err := g.Get("alice", r.ID())
	assert.ErrorIs(t, err, ErrNotFound)

	old := g.Start(NewID(), "alice", "run_code", "", nil)
	old.Finish(StatusCompleted, json.RawMessage(`{}`))
	now = now.Add(2 * time.Minute)
	buf.Reset()
	_, _, err = g.List("alice", "", 10, "")
	require.NoError(t, err)
	assert.Contains(t, buf.String(), `"run_id":"`+old.ID()+`","message":"cannot delete an expired run record"`)
	assert.Contains(t, st.deleted, old.ID())
}

// FileStore's failures are errors naming what failed; LoadAll returns the
// records it could read together with the errors of the others, and
// leaves out files that are not run records.
func TestFileStoreErrors(t *testing.T) {
	dir := t.TempDir()
	st, err := NewFileStore(dir)
	require.NoError(t, err)
	ctx := context.Background()
	good := &Record{ID: NewID(), Owner: "alice", Status: StatusCompleted}
	require.NoError(t, st.Save(ctx, good))

	corrupt := NewID()
	require.NoError(t, os.WriteFile(filepath.Join(dir, corrupt+".json"), []byte("{"), 0o600))
	unreadable := NewID()
	require.NoError(t, os.Mkdir(filepath.Join(dir, unreadable+".json"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run_zz.json"), []byte("{"), 0o600))

	recs, err := st.LoadAll(ctx)
	require.Len(t, recs, 1)
	assert.Equal(t, good.ID, recs[0].ID)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "runs: decode "+filepath.Join(dir, corrupt+".json"))
	assert.Contains(t, err.Error(), "runs: read "+filepath.Join(dir, unreadable+".json"))
	assert.NotContains(t, err.Error(), "run_zz")

	// A record that does not encode is not written.
	err = st.Save(ctx, &Record{ID: NewID(), Result: json.RawMessage("{")})
	assert.ErrorContains(t, err, "runs: encode run_")

	// Saving over a directory fails, and leaves no temporary file.
	err = st.Save(ctx, &Record{ID: unreadable})
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "runs: save "+unreadable), err)
	_, statErr := os.Stat(filepath.Join(dir, unreadable+".json.tmp"))
	assert.ErrorIs(t, statErr, os.ErrNotExist)

	// Deleting a record that is not there is no error; one that cannot
	// be removed is.
	require.NoError(t, st.Delete(ctx, NewID()))
	require.NoError(t, os.WriteFile(filepath.Join(dir, unreadable+".json", "x"), []byte("x"), 0o600))
	err = st.Delete(ctx, unreadable)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "runs: delete "+unreadable), err)

	// A folder that is gone cannot be listed or written.
	require.NoError(t, os.RemoveAll(dir))
	_, err = st.LoadAll(ctx)
	assert.ErrorContains(t, err, "runs: list "+dir)
	err = st.Save(ctx, good)
	assert.ErrorContains(t, err, "runs: save "+good.ID)

	// A store cannot be made where a file is.
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	_, err = NewFileStore(filepath.Join(file, "runs"))
	assert.ErrorContains(t, err, "runs: create "+filepath.Join(file, "runs"))
}

// A MemoryStore refuses ids that are not run ids, like a FileStore.
func TestMemoryStoreRejectsBadIDs(t *testing.T) {
	st := NewMemoryStore()
	for _, id := range []string{"../x", "run_", "run_0123456789ABCDEF"} {
		assert.ErrorIs(t, st.Save(context.Background(), &Record{ID: id}), ErrNotFound, id)
		assert.ErrorIs(t, st.Delete(context.Background(), id), ErrNotFound, id)
	}
}

// Run ids are "run_" and exactly 16 lowercase hex digits: every edge of
// the alphabet is in, the characters beside it are out.
func TestValidIDAlphabet(t *testing.T) {
	for _, id := range []string{"run_0000000000000000", "run_9999999999999999", "run_aaaaaaaaaaaaaaaa", "run_ffffffffffffffff",
		"run_0123456789abcdef"} {
		assert.True(t, validID(id), id)
	}
	for _, id := range []string{"run_000000000000000/", "run_000000000000000:", "run_000000000000000`", "run_000000000000000g",
		"run_000000000000000A", "run_000000000000000", "run_00000000000000000", "xun_0000000000000000"} {
		assert.False(t, validID(id), id)
	}
}
