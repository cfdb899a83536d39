package runs_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/runs"
	"github.com/skillgate/skillgate/runs/objstore"
	"github.com/skillgate/skillgate/runs/runstest"
)

// replicas opens two registries over one object space, as two gateway
// replicas sharing a bucket.
func replicas(t *testing.T, cfg runs.Config) (a, b *runs.Registry, obj blob.Objects) {
	t.Helper()
	bs := blob.NewMemStore(blob.MemOptions{})
	t.Cleanup(func() { _ = bs.Close() })
	obj = bs.Objects()
	open := func() *runs.Registry {
		c := cfg
		c.Store = objstore.New(obj)
		g, err := runs.Open(context.Background(), c)
		require.NoError(t, err)
		t.Cleanup(g.Close)
		return g
	}
	return open(), open(), obj
}

func follow(t *testing.T, r *runs.Run, after uint64) []runs.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // safety net only
	defer cancel()
	var evs []runs.Event
	require.NoError(t, r.Follow(ctx, after, func(e runs.Event) error { evs = append(evs, e); return nil }))
	return evs
}

func TestSharedFinishedRunOnAnotherReplica(t *testing.T) {
	a, b, _ := replicas(t, runs.Config{})
	r := a.Start(runs.NewID(), "alice", "run_code", "req-7", nil)
	r.Started(0)
	r.Log(runs.StreamStdout, []byte("hello\n"))
	r.Finish(runs.StatusCompleted, json.RawMessage(`{"status":"completed","run_id":"x"}`))

	got, err := b.Get("alice", r.ID())
	require.NoError(t, err)
	assert.JSONEq(t, `{"status":"completed","run_id":"x"}`, string(got.Object()))
	assert.Equal(t, "req-7", got.Record().RequestID)
	assert.Equal(t, follow(t, r, 0), follow(t, got, 0), "B replays the events A kept")

	_, err = b.Get("mallory", r.ID())
	assert.ErrorIs(t, err, runs.ErrNotFound, "another identity does not see it")
	_, err = b.Get("alice", runs.NewID())
	assert.ErrorIs(t, err, runs.ErrNotFound)
	_, err = b.Get("alice", "not-a-run")
	assert.ErrorIs(t, err, runs.ErrNotFound)

	local := b.Start(runs.NewID(), "alice", "execute_skill", "", nil)
	defer local.Finish(runs.StatusCompleted, json.RawMessage(`{}`))
	page, next, err := b.List("alice", "", 10, "")
	require.NoError(t, err)
	assert.Empty(t, next)
	require.Len(t, page, 2, "B lists its own run and A's")
	assert.Equal(t, local.ID(), page[0].ID, "newest first")
	assert.Equal(t, r.ID(), page[1].ID)
	page, _, err = b.List("alice", "finished", 10, "")
	require.NoError(t, err)
	require.Len(t, page, 1)
	assert.Equal(t, runs.StatusCompleted, page[0].Status)
	page, _, err = b.List("mallory", "", 10, "")
	require.NoError(t, err)
	assert.Empty(t, page)
}

// A run in progress on A is seen running on B, and B's followers get its
// events as A checkpoints them, up to finished.
func TestSharedRunningRunFollowedFromAnotherReplica(t *testing.T) {
	a, b, _ := replicas(t, runs.Config{CheckpointInterval: 10 * time.Millisecond})
	r := a.Start(runs.NewID(), "alice", "run_code", "", nil)
	r.Started(0)
	remote, err := b.Get("alice", r.ID())
	require.NoError(t, err)
	var obj struct{ Status string }
	require.NoError(t, json.Unmarshal(remote.Object(), &obj))
	assert.Equal(t, runs.StatusRunning, obj.Status)
	page, _, err := b.List("alice", runs.StatusRunning, 10, "")
	require.NoError(t, err)
	require.Len(t, page, 1)

	got := make(chan []runs.Event, 1)
	go func() { got <- follow(t, remote, 0) }()
	for i := range 5 {
		r.Log(runs.StreamStdout, []byte{'a' + byte(i), '\n'})
		time.Sleep(20 * time.Millisecond) // lets checkpoints land in between; no timing is asserted
	}
	r.Finish(runs.StatusFailed, json.RawMessage(`{"status":"failed"}`))
	evs := <-got
	require.NotEmpty(t, evs)
	assert.Equal(t, runs.EventStarted, evs[0].Type)
	assert.Equal(t, runs.EventFinished, evs[len(evs)-1].Type)
	for i := 1; i < len(evs); i++ {
		assert.Greater(t, evs[i].Seq, evs[i-1].Seq)
	}
	assert.Equal(t, follow(t, r, 0), follow(t, remote, 0))

	again, err := b.Get("alice", r.ID())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, again.Wait(ctx))
	assert.JSONEq(t, `{"status":"failed"}`, string(again.Object()))
}

// cancel_run on a replica other than the one running the run stops it:
// the request goes through the shared store, and the running replica
// cancels the run's context with ErrCanceled.
func TestSharedCancelOnAnotherReplica(t *testing.T) {
	a, b, _ := replicas(t, runs.Config{CheckpointInterval: 10 * time.Millisecond, CancelPollInterval: 10 * time.Millisecond})
	runstest.CancelOnAnotherReplica(t, a, b)
}

// A running record nobody updates any more belongs to a replica that is
// gone: readers report the run interrupted.
func TestSharedStaleRunIsInterrupted(t *testing.T) {
	_, b, obj := replicas(t, runs.Config{StaleAfter: time.Minute})
	st := objstore.New(obj)
	old := time.Now().Add(-2 * time.Minute)
	rec := &runs.Record{ID: runs.NewID(), Owner: "alice", What: "run_code", Status: runs.StatusRunning, StartedAt: old, Updated: old}
	require.NoError(t, st.Save(context.Background(), rec))
	r, err := b.Get("alice", rec.ID)
	require.NoError(t, err)
	var obj2 struct {
		Status string
		Error  struct{ Type string }
	}
	require.NoError(t, json.Unmarshal(r.Object(), &obj2))
	assert.Equal(t, runs.StatusFailed, obj2.Status)
	assert.Equal(t, "INTERRUPTED", obj2.Error.Type)
	page, _, err := b.List("alice", "finished", 10, "")
	require.NoError(t, err)
	require.Len(t, page, 1)
}

// Every replica sweeps expired records, whoever ran them.
func TestSharedSweep(t *testing.T) {
	a, b, obj := replicas(t, runs.Config{Retention: time.Millisecond, SweepInterval: 10 * time.Millisecond,
		CheckpointInterval: 5 * time.Millisecond})
	done := a.Start(runs.NewID(), "alice", "run_code", "", nil)
	done.Finish(runs.StatusCompleted, json.RawMessage(`{}`))
	running := a.Start(runs.NewID(), "alice", "run_code", "", nil)
	st := objstore.New(obj)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if _, err := st.Load(ctx, "alice", done.ID()); err != nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, err := st.Load(ctx, "alice", done.ID())
	require.ErrorIs(t, err, runs.ErrNotFound, "the finished record was swept")
	_, err = b.Get("alice", done.ID())
	assert.ErrorIs(t, err, runs.ErrNotFound)
	running.Finish(runs.StatusCompleted, json.RawMessage(`{}`))
}

func TestWaitIdle(t *testing.T) {
	a, _, _ := replicas(t, runs.Config{})
	r := a.Start(runs.NewID(), "alice", "run_code", "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	assert.ErrorIs(t, a.WaitIdle(ctx), context.DeadlineExceeded, "a run is in progress")
	cancel()
	r.Finish(runs.StatusCompleted, json.RawMessage(`{}`))
	require.NoError(t, a.WaitIdle(context.Background()))
}

// With a shared store a replica keeps nothing of its finished runs in
// memory: it reads them back from the store when asked, events included.
// The sweep holds each identity to its bound.
func TestSharedFinishedRunsLeaveMemoryAndBounds(t *testing.T) {
	// On files, so that the heap holds what the registry does and not
	// the store's objects.
	bs, err := blob.OpenFSStore(blob.FSOptions{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = bs.Close() })
	open := func() *runs.Registry {
		g, err := runs.Open(context.Background(), runs.Config{Store: objstore.New(bs.Objects()),
			SweepInterval: 10 * time.Millisecond, Bounds: runs.Bounds{MaxOwnerRecords: 3}})
		require.NoError(t, err)
		t.Cleanup(g.Close)
		return g
	}
	a, b := open(), open()
	const n, logBytes = 12, 256 << 10
	line := strings.Repeat("z", 1023) + "\n"
	var last *runs.Run
	before := heldBytes()
	for range n {
		last = a.Start(runs.NewID(), "alice", "run_code", "", nil)
		last.Started(0)
		for range logBytes / len(line) {
			last.Log(runs.StreamStdout, []byte(line))
		}
		last.Finish(runs.StatusCompleted, json.RawMessage(`{"status":"completed"}`))
	}
	id := last.ID()
	last = nil
	held := int64(heldBytes()) - int64(before)
	t.Logf("replica after %d runs of %d log bytes each holds %d bytes more", n, logBytes, held)
	assert.Less(t, held, int64(logBytes), "not the runs' logs")

	for range 3000 { // the sweep runs every 10 ms; bounded wait
		page, _, err := b.List("alice", "", 100, "")
		require.NoError(t, err)
		if len(page) <= 3 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	page, _, err := b.List("alice", "", 100, "")
	require.NoError(t, err)
	require.Len(t, page, 3, "the identity's bound")
	assert.Equal(t, id, page[0].ID, "the newest stays")
	for _, g := range []*runs.Registry{a, b} {
		r, err := g.Get("alice", id)
		require.NoError(t, err)
		var text strings.Builder
		for _, ev := range follow(t, r, 0) {
			var d struct{ Text string }
			_ = json.Unmarshal(ev.Data, &d)
			text.WriteString(d.Text)
		}
		assert.Equal(t, strings.Repeat(line, logBytes/len(line)), text.String())
	}
}

// heldBytes is what the heap holds, once collected.
func heldBytes() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
