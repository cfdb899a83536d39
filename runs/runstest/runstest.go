// Package runstest is the conformance suite of runs.Store and
// runs.SharedStore: every backend's tests call Run (and RunShared for a
// shared store), so that the memory, file and object-store backends keep
// one contract.
package runstest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/runs"
)

// NewStore returns an empty store for one test.
type NewStore func(t *testing.T) runs.Store

// NewShared returns two stores over one empty backend, as two replicas
// see it.
type NewShared func(t *testing.T) (a, b runs.SharedStore)

// Run checks the runs.Store contract.
func Run(t *testing.T, newStore NewStore) {
	t.Run("RoundTrip", func(t *testing.T) { roundTrip(t, newStore(t)) })
	t.Run("SaveReplaces", func(t *testing.T) { saveReplaces(t, newStore(t)) })
	t.Run("Delete", func(t *testing.T) { deleteRecords(t, newStore(t)) })
	t.Run("ConcurrentSaves", func(t *testing.T) { concurrentSaves(t, newStore(t)) })
}

// RunShared checks the runs.SharedStore contract, then runs.Store's.
func RunShared(t *testing.T, newShared NewShared) {
	t.Run("Store", func(t *testing.T) {
		Run(t, func(t *testing.T) runs.Store { a, _ := newShared(t); return a })
	})
	t.Run("LoadAcrossReplicas", func(t *testing.T) { loadAcross(t, newShared) })
	t.Run("OwnersApart", func(t *testing.T) { ownersApart(t, newShared) })
	t.Run("ListWithoutEvents", func(t *testing.T) { listWithoutEvents(t, newShared) })
	t.Run("Sweep", func(t *testing.T) { sweep(t, newShared) })
	t.Run("DeleteFromAnotherReplica", func(t *testing.T) { deleteAcross(t, newShared) })
	t.Run("CancelAcrossReplicas", func(t *testing.T) { cancelAcross(t, newShared) })
	t.Run("SweepBounds", func(t *testing.T) { sweepBounds(t, newShared) })
}

// sweepBounds: past a bound the sweep removes the oldest finished
// records, per owner then in all; a record in progress is counted but
// stays.
func sweepBounds(t *testing.T, newShared NewShared) {
	a, b := newShared(t)
	var old []*runs.Record
	for range 4 {
		rec := Record("alice", 2)
		require.NoError(t, a.Save(ctx(t), rec))
		old = append(old, rec)
	}
	bob := Record("bob", 1)
	require.NoError(t, a.Save(ctx(t), bob))
	// Object stores keep modification times to the second: the newer
	// records are written in a later one.
	time.Sleep(1100 * time.Millisecond)
	running := Record("alice", 1)
	running.Status, running.FinishedAt, running.Result = runs.StatusRunning, time.Time{}, nil
	require.NoError(t, a.Save(ctx(t), running))
	newer := []*runs.Record{Record("alice", 1), Record("alice", 1)}
	for _, rec := range newer {
		require.NoError(t, a.Save(ctx(t), rec))
	}
	n, err := b.Sweep(ctx(t), time.Now().Add(-time.Hour), runs.Bounds{MaxOwnerRecords: 3})
	require.NoError(t, err)
	assert.Equal(t, 4, n, "alice's four oldest")
	ids := func(owner string) []string {
		recs, err := a.List(ctx(t), owner)
		require.NoError(t, err)
		var out []string
		for _, r := range recs {
			out = append(out, r.ID)
		}
		return out
	}
	assert.ElementsMatch(t, []string{running.ID, newer[0].ID, newer[1].ID}, ids("alice"))
	for _, rec := range old {
		_, err := a.Load(ctx(t), "alice", rec.ID)
		assert.ErrorIs(t, err, runs.ErrNotFound, "the oldest went")
	}
	assert.Equal(t, []string{bob.ID}, ids("bob"))

	n, err = a.Sweep(ctx(t), time.Now().Add(-time.Hour), runs.Bounds{MaxBytes: 1})
	require.NoError(t, err)
	assert.Equal(t, 3, n, "every finished record is over one byte")
	assert.Equal(t, []string{running.ID}, ids("alice"), "a record in progress stays")
	assert.Empty(t, ids("bob"))
}

// cancelAcross: a cancel requested on one replica is seen by the other
// until it clears it; the sweep removes requests older than its cutoff.
func cancelAcross(t *testing.T, newShared NewShared) {
	a, b := newShared(t)
	ids, err := a.CancelRequests(ctx(t))
	require.NoError(t, err)
	assert.Empty(t, ids)
	one, two := runs.NewID(), runs.NewID()
	require.NoError(t, b.RequestCancel(ctx(t), "alice", one))
	require.NoError(t, b.RequestCancel(ctx(t), "alice", one), "asking twice is no error")
	require.NoError(t, b.RequestCancel(ctx(t), "bob", two))
	assert.ErrorIs(t, b.RequestCancel(ctx(t), "alice", "not-a-run"), runs.ErrNotFound)
	ids, err = a.CancelRequests(ctx(t))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{one, two}, ids)
	require.NoError(t, a.ClearCancel(ctx(t), one))
	require.NoError(t, a.ClearCancel(ctx(t), one), "clearing twice is no error")
	ids, err = b.CancelRequests(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, []string{two}, ids)
	_, err = a.Sweep(ctx(t), time.Now().Add(time.Hour), runs.Bounds{})
	require.NoError(t, err)
	ids, err = b.CancelRequests(ctx(t))
	require.NoError(t, err)
	assert.Empty(t, ids, "the sweep removes old requests")
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute) // a safety net, not a measure
	t.Cleanup(cancel)
	return c
}

// Record returns a finished record of owner with n events.
func Record(owner string, n int) *runs.Record {
	start := time.Now().UTC().Truncate(time.Millisecond).Add(-time.Second)
	rec := &runs.Record{
		ID: runs.NewID(), Owner: owner, What: "run_code", RequestID: "req-1", Status: runs.StatusCompleted,
		StartedAt: start, FinishedAt: start.Add(500 * time.Millisecond), Updated: start.Add(500 * time.Millisecond),
		Progress: json.RawMessage(`{"progress":1,"total":2,"message":"half"}`),
		Result:   json.RawMessage(`{"status":"completed","summary":"ok"}`),
	}
	for i := 1; i <= n; i++ {
		rec.Events = append(rec.Events, runs.Event{Seq: uint64(i), Type: runs.EventLog,
			Data: json.RawMessage(fmt.Sprintf(`{"stream":"log","text":"line %d\n"}`, i))})
	}
	return rec
}

// equal compares records, times by instant and JSON by value.
func equal(t *testing.T, want, got *runs.Record) {
	t.Helper()
	require.NotNil(t, got)
	assert.Equal(t, want.ID, got.ID)
	assert.Equal(t, want.Owner, got.Owner)
	assert.Equal(t, want.What, got.What)
	assert.Equal(t, want.RequestID, got.RequestID)
	assert.Equal(t, want.Status, got.Status)
	assert.True(t, want.StartedAt.Equal(got.StartedAt), "started_at %v, want %v", got.StartedAt, want.StartedAt)
	assert.True(t, want.FinishedAt.Equal(got.FinishedAt), "finished_at %v, want %v", got.FinishedAt, want.FinishedAt)
	assert.JSONEq(t, string(want.Progress), string(got.Progress))
	assert.JSONEq(t, string(want.Result), string(got.Result))
	require.Len(t, got.Events, len(want.Events))
	for i := range want.Events {
		assert.Equal(t, want.Events[i].Seq, got.Events[i].Seq)
		assert.Equal(t, want.Events[i].Type, got.Events[i].Type)
		assert.JSONEq(t, string(want.Events[i].Data), string(got.Events[i].Data))
	}
}

func byID(recs []*runs.Record, id string) *runs.Record {
	i := slices.IndexFunc(recs, func(r *runs.Record) bool { return r.ID == id })
	if i < 0 {
		return nil
	}
	return recs[i]
}

func roundTrip(t *testing.T, s runs.Store) {
	recs, err := s.LoadAll(ctx(t))
	require.NoError(t, err)
	assert.Empty(t, recs, "a new store is empty")
	a, b := Record("alice", 3), Record("bob", 0)
	b.Status, b.FinishedAt, b.Result = runs.StatusRunning, time.Time{}, nil
	require.NoError(t, s.Save(ctx(t), a))
	require.NoError(t, s.Save(ctx(t), b))
	recs, err = s.LoadAll(ctx(t))
	require.NoError(t, err)
	require.Len(t, recs, 2)
	head := byID(recs, a.ID)
	equalHead(t, a, head)
	assert.Positive(t, head.Size, "LoadAll tells each record's size")
	got := byID(recs, b.ID)
	require.NotNil(t, got)
	assert.Equal(t, runs.StatusRunning, got.Status)
	assert.Empty(t, got.Events)
	full, err := s.Load(ctx(t), "alice", a.ID)
	require.NoError(t, err)
	equal(t, a, full)
	_, err = s.Load(ctx(t), "bob", a.ID)
	assert.ErrorIs(t, err, runs.ErrNotFound, "another owner's record")
	_, err = s.Load(ctx(t), "alice", runs.NewID())
	assert.ErrorIs(t, err, runs.ErrNotFound)
	_, err = s.Load(ctx(t), "alice", "../escape")
	assert.ErrorIs(t, err, runs.ErrNotFound)
}

// equalHead compares what LoadAll returns of a record: all but its
// events, run object and progress.
func equalHead(t *testing.T, want, got *runs.Record) {
	t.Helper()
	require.NotNil(t, got)
	assert.Equal(t, want.ID, got.ID)
	assert.Equal(t, want.Owner, got.Owner)
	assert.Equal(t, want.What, got.What)
	assert.Equal(t, want.Status, got.Status)
	assert.True(t, want.StartedAt.Equal(got.StartedAt), "started_at %v, want %v", got.StartedAt, want.StartedAt)
	assert.True(t, want.FinishedAt.Equal(got.FinishedAt), "finished_at %v, want %v", got.FinishedAt, want.FinishedAt)
	assert.Empty(t, got.Events, "LoadAll leaves the events in the store")
	assert.Empty(t, got.Result)
}

func saveReplaces(t *testing.T, s runs.Store) {
	rec := Record("alice", 2)
	rec.Status, rec.FinishedAt = runs.StatusRunning, time.Time{}
	require.NoError(t, s.Save(ctx(t), rec))
	done := *rec
	done.Status, done.FinishedAt = runs.StatusFailed, rec.StartedAt.Add(time.Second)
	done.Events = append(slices.Clone(rec.Events), runs.Event{Seq: 3, Type: runs.EventFinished, Data: json.RawMessage(`{"status":"failed"}`)})
	require.NoError(t, s.Save(ctx(t), &done))
	recs, err := s.LoadAll(ctx(t))
	require.NoError(t, err)
	require.Len(t, recs, 1)
	equalHead(t, &done, recs[0])
	full, err := s.Load(ctx(t), done.Owner, done.ID)
	require.NoError(t, err)
	equal(t, &done, full)
}

func deleteRecords(t *testing.T, s runs.Store) {
	a, b := Record("alice", 1), Record("alice", 1)
	require.NoError(t, s.Save(ctx(t), a))
	require.NoError(t, s.Save(ctx(t), b))
	require.NoError(t, s.Delete(ctx(t), a.ID))
	require.NoError(t, s.Delete(ctx(t), a.ID), "deleting twice is no error")
	require.NoError(t, s.Delete(ctx(t), runs.NewID()), "deleting an unknown run is no error")
	recs, err := s.LoadAll(ctx(t))
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, b.ID, recs[0].ID)
	bad := Record("alice", 0)
	bad.ID = "../escape"
	assert.ErrorIs(t, s.Save(ctx(t), bad), runs.ErrNotFound, "a malformed id is refused")
	assert.ErrorIs(t, s.Delete(ctx(t), "../escape"), runs.ErrNotFound)
}

func concurrentSaves(t *testing.T, s runs.Store) {
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Save(ctx(t), Record(fmt.Sprintf("owner-%d", i%3), i))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	recs, err := s.LoadAll(ctx(t))
	require.NoError(t, err)
	assert.Len(t, recs, n)
}

func loadAcross(t *testing.T, newShared NewShared) {
	a, b := newShared(t)
	rec := Record("alice", 5)
	rec.Status, rec.FinishedAt, rec.Result = runs.StatusRunning, time.Time{}, nil
	require.NoError(t, a.Save(ctx(t), rec))
	got, err := b.Load(ctx(t), "alice", rec.ID)
	require.NoError(t, err)
	assert.Equal(t, runs.StatusRunning, got.Status)
	assert.Len(t, got.Events, 5)
	// The replica running it saves again: the other sees the news.
	rec.Events = append(rec.Events, runs.Event{Seq: 6, Type: runs.EventFinished, Data: json.RawMessage(`{"status":"completed"}`)})
	rec.Status, rec.FinishedAt, rec.Result = runs.StatusCompleted, time.Now().UTC(), json.RawMessage(`{"status":"completed"}`)
	require.NoError(t, a.Save(ctx(t), rec))
	got, err = b.Load(ctx(t), "alice", rec.ID)
	require.NoError(t, err)
	equal(t, rec, got)
}

func ownersApart(t *testing.T, newShared NewShared) {
	a, b := newShared(t)
	rec := Record("alice", 1)
	require.NoError(t, a.Save(ctx(t), rec))
	for _, tc := range []struct{ owner, id string }{
		{"mallory", rec.ID}, {"", rec.ID}, {"alice", runs.NewID()}, {"alice", "run_zz"}, {"alice", "../" + rec.ID},
	} {
		_, err := b.Load(ctx(t), tc.owner, tc.id)
		assert.ErrorIs(t, err, runs.ErrNotFound, "%s %s", tc.owner, tc.id)
	}
	list, err := b.List(ctx(t), "mallory")
	require.NoError(t, err)
	assert.Empty(t, list)
}

func listWithoutEvents(t *testing.T, newShared NewShared) {
	a, b := newShared(t)
	mine := []*runs.Record{Record("alice", 3), Record("alice", 0), Record("alice/with:odd chars", 2)}
	for _, r := range append(mine, Record("bob", 1)) {
		require.NoError(t, a.Save(ctx(t), r))
	}
	list, err := b.List(ctx(t), "alice")
	require.NoError(t, err)
	require.Len(t, list, 2)
	for _, want := range mine[:2] {
		got := byID(list, want.ID)
		require.NotNil(t, got)
		assert.Equal(t, "alice", got.Owner)
		assert.Equal(t, want.Status, got.Status)
		assert.True(t, want.StartedAt.Equal(got.StartedAt))
		assert.Empty(t, got.Events, "List leaves the events out")
	}
	list, err = b.List(ctx(t), "alice/with:odd chars")
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, mine[2].ID, list[0].ID)
}

func sweep(t *testing.T, newShared NewShared) {
	a, b := newShared(t)
	old, young := Record("alice", 2), Record("alice", 1)
	require.NoError(t, a.Save(ctx(t), old))
	require.NoError(t, a.Save(ctx(t), young))
	n, err := b.Sweep(ctx(t), time.Now().Add(-time.Hour), runs.Bounds{})
	require.NoError(t, err)
	assert.Zero(t, n, "nothing is an hour old")
	// Both replicas sweep at once: each record goes once, no error.
	cutoff := time.Now().Add(time.Hour)
	var wg sync.WaitGroup
	counts, errs := make([]int, 2), make([]error, 2)
	for i, s := range []runs.SharedStore{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[i], errs[i] = s.Sweep(ctx(t), cutoff, runs.Bounds{})
		}()
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	assert.GreaterOrEqual(t, counts[0]+counts[1], 2)
	recs, err := a.LoadAll(ctx(t))
	require.NoError(t, err)
	assert.Empty(t, recs)
	_, err = b.Load(ctx(t), "alice", old.ID)
	assert.ErrorIs(t, err, runs.ErrNotFound)
}

func deleteAcross(t *testing.T, newShared NewShared) {
	a, b := newShared(t)
	rec := Record("alice", 1)
	require.NoError(t, a.Save(ctx(t), rec))
	require.NoError(t, b.Delete(ctx(t), rec.ID), "a replica deletes a run another saved")
	_, err := a.Load(ctx(t), "alice", rec.ID)
	assert.ErrorIs(t, err, runs.ErrNotFound)
}

// CancelOnAnotherReplica checks a cancel made through replica b of a run
// that replica a runs: the request goes through the shared store, a
// cancels the run's context with runs.ErrCanceled, and b sees the run end
// cancelled.
func CancelOnAnotherReplica(t *testing.T, a, b *runs.Registry) {
	runCtx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	r := a.Start(runs.NewID(), "alice", "run_code", "", cancel)
	r.Started(0)
	go func() {
		<-runCtx.Done()
		r.Finish(runs.StatusFailed, json.RawMessage(`{"status":"failed","error":{"type":"CANCELLED"}}`))
	}()

	remote, err := b.Get("alice", r.ID())
	require.NoError(t, err)
	remote.Cancel()
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second) // safety net only
	defer stop()
	require.NoError(t, remote.Wait(ctx), "the run ends")
	assert.ErrorIs(t, context.Cause(runCtx), runs.ErrCanceled)
	assert.JSONEq(t, `{"status":"failed","error":{"type":"CANCELLED"}}`, string(remote.Object()))
}
