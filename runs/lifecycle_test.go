package runs

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A run is its owner's, with the id it was started with; Done is closed
// once it finishes.
func TestRunAccessors(t *testing.T) {
	g := open(t, Config{})
	id := NewID()
	r := g.Start(id, "alice", "run_code", "req-1", nil)
	assert.Equal(t, id, r.ID())
	assert.Equal(t, "alice", r.Owner())
	select {
	case <-r.Done():
		t.Fatal("done before it finished")
	default:
	}
	r.Finish(StatusCompleted, json.RawMessage(`{}`))
	select {
	case <-r.Done():
	default:
		t.Fatal("not done once finished")
	}
	assert.True(t, ValidID(id))
	assert.False(t, ValidID("run_0123"))
}

// Only the first Finish counts; what comes after it (output, progress,
// blobs, another Finish) changes nothing, for followers or get_run.
func TestNothingFollowsFinished(t *testing.T) {
	g := open(t, Config{})
	r := g.Start(NewID(), "alice", "run_code", "", nil)
	r.Started(0)
	r.Finish(StatusCompleted, json.RawMessage(`{"status":"completed"}`))
	want := collect(t, r, 0)
	require.Len(t, want, 2)

	r.Log(StreamStdout, []byte("late\n"))
	r.Progress(json.RawMessage(`{"progress":1,"total":null,"message":null}`))
	r.Blob("blob:00", "text/plain", 1)
	r.Finish(StatusFailed, json.RawMessage(`{"status":"failed"}`))

	assert.Equal(t, want, collect(t, r, 0))
	assert.JSONEq(t, `{"status":"completed"}`, string(r.Object()))
	assert.Nil(t, r.FullLogs())
	rec := r.Record()
	assert.Equal(t, StatusCompleted, rec.Status)
	assert.Empty(t, rec.Progress)
}

// get_run of a run in progress: its id, status, what and start time, its
// latest progress (null before any).
func TestObjectOfARunningRun(t *testing.T) {
	start := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	g := open(t, Config{Now: func() time.Time { return start }})
	r := g.Start("run_00000000000000aa", "alice", "acme.x@1.0.0", "", nil)
	assert.JSONEq(t, `{"run_id":"run_00000000000000aa","status":"running","what":"acme.x@1.0.0",`+
		`"started_at":"2026-11-23T10:00:00Z","progress":null}`, string(r.Object()))
	r.Progress(json.RawMessage(`{"progress":2,"total":4,"message":"half"}`))
	assert.JSONEq(t, `{"run_id":"run_00000000000000aa","status":"running","what":"acme.x@1.0.0",`+
		`"started_at":"2026-11-23T10:00:00Z","progress":{"progress":2,"total":4,"message":"half"}}`, string(r.Object()))
	r.Finish(StatusCompleted, json.RawMessage(`{"status":"completed"}`))
}

// Wait returns when the run finishes, or with the context's error.
func TestWaitEndsWithItsContext(t *testing.T) {
	g := open(t, Config{})
	r := g.Start(NewID(), "alice", "run_code", "", nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, r.Wait(ctx), context.Canceled)
	r.Finish(StatusCompleted, json.RawMessage(`{}`))
	assert.NoError(t, r.Wait(context.Background()))
}

// A follower whose send fails stops with that error; one whose context
// ends while it waits for events stops with the context's error.
func TestFollowStops(t *testing.T) {
	g := open(t, Config{})
	r := g.Start(NewID(), "alice", "run_code", "", nil)
	r.Started(0)
	boom := assert.AnError
	err := r.Follow(context.Background(), 0, func(Event) error { return boom })
	assert.ErrorIs(t, err, boom)

	ctx, cancel := context.WithCancel(context.Background())
	var got []Event
	done := make(chan error, 1)
	go func() {
		done <- r.Follow(ctx, 0, func(e Event) error { got = append(got, e); return nil })
	}()
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	r.Finish(StatusCompleted, json.RawMessage(`{}`))
}

// A follower under pressure that has a single event to send sends it,
// however often it is pressed: there is nothing to compact.
func TestFollowPressedWithOneEvent(t *testing.T) {
	g := open(t, Config{})
	r := g.Start(NewID(), "alice", "run_code", "", nil)
	r.Started(0)
	r.Blob("blob:00", "text/plain", 1)
	r.Finish(StatusCompleted, json.RawMessage(`{}`))
	asked := 0
	var got []string
	require.NoError(t, r.FollowCompacting(context.Background(), 2, func() bool {
		if asked++; asked > 100 {
			t.Fatal("pressed asked again and again: the follower spins")
		}
		return true
	}, func(e Event) error {
		got = append(got, e.Type)
		return nil
	}))
	assert.Equal(t, []string{EventFinished}, got)
}

// Discard forgets a run that never began: it is not found, not listed,
// and its record is gone from the store.
func TestDiscard(t *testing.T) {
	st := NewMemoryStore()
	g := open(t, Config{Store: st})
	r := g.Start(NewID(), "alice", "run_code", "", nil)
	kept := g.Start(NewID(), "alice", "run_code", "", nil)
	g.Discard(r)
	_, err := g.Get("alice", r.ID())
	assert.ErrorIs(t, err, ErrNotFound)
	page, _, err := g.List("alice", "", 10, "")
	require.NoError(t, err)
	require.Len(t, page, 1)
	assert.Equal(t, kept.ID(), page[0].ID)
	recs, err := st.LoadAll(context.Background())
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, kept.ID(), recs[0].ID)
	kept.Finish(StatusCompleted, json.RawMessage(`{}`))
}

// A finished run stays readable for exactly the retention: at the
// retention it is found, a nanosecond later it is gone, from the registry
// and from its store. A run in progress never expires.
func TestRetentionBoundary(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	st := NewMemoryStore()
	g := open(t, Config{Store: st, Now: func() time.Time { return now }, Retention: time.Hour})
	done := g.Start(NewID(), "alice", "run_code", "", nil)
	done.Finish(StatusCompleted, json.RawMessage(`{}`))
	running := g.Start(NewID(), "alice", "run_code", "", nil)

	now = now.Add(time.Hour)
	_, err := g.Get("alice", done.ID())
	require.NoError(t, err, "at exactly the retention")
	page, _, err := g.List("alice", "", 10, "")
	require.NoError(t, err)
	assert.Len(t, page, 2)

	now = now.Add(time.Nanosecond)
	_, err = g.Get("alice", done.ID())
	assert.ErrorIs(t, err, ErrNotFound, "one nanosecond past it")
	page, _, err = g.List("alice", "", 10, "")
	require.NoError(t, err)
	require.Len(t, page, 1, "pruned")
	assert.Equal(t, running.ID(), page[0].ID)
	recs, err := st.LoadAll(context.Background())
	require.NoError(t, err)
	require.Len(t, recs, 1, "its record is deleted")
	assert.Equal(t, running.ID(), recs[0].ID)

	now = now.Add(24 * time.Hour)
	_, err = g.Get("alice", running.ID())
	assert.NoError(t, err, "a run in progress does not expire")
	running.Finish(StatusCompleted, json.RawMessage(`{}`))
}

// Runs are listed with how long they took, or have taken so far.
func TestListDurations(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	g := open(t, Config{Now: func() time.Time { return now }})
	done := g.Start(NewID(), "alice", "run_code", "", nil)
	now = now.Add(1500 * time.Millisecond)
	done.Finish(StatusCompleted, json.RawMessage(`{}`))
	running := g.Start(NewID(), "alice", "run_code", "", nil)
	now = now.Add(250 * time.Millisecond)
	page, next, err := g.List("alice", "", 10, "")
	require.NoError(t, err)
	assert.Empty(t, next)
	require.Len(t, page, 2)
	assert.Equal(t, Summary{ID: running.ID(), Status: StatusRunning, What: "run_code", StartedAt: now.Add(-250 * time.Millisecond),
		DurationMS: 250}, page[0])
	assert.Equal(t, int64(1500), page[1].DurationMS)
	running.Finish(StatusCompleted, json.RawMessage(`{}`))
}

// A page of exactly the remaining runs has no next cursor; a cursor
// naming the last run of a page continues after it.
func TestListPageBoundary(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	g := open(t, Config{Now: func() time.Time { return now }})
	for range 4 {
		now = now.Add(time.Second)
		g.Start(NewID(), "alice", "run_code", "", nil).Finish(StatusCompleted, json.RawMessage(`{}`))
	}
	page, next, err := g.List("alice", "", 4, "")
	require.NoError(t, err)
	assert.Len(t, page, 4)
	assert.Empty(t, next, "exactly the runs there are: no next page")

	page, next, err = g.List("alice", "", 3, "")
	require.NoError(t, err)
	require.Len(t, page, 3)
	require.NotEmpty(t, next)
	assert.Equal(t, strings.Split(next, ".")[1], page[2].ID)
	rest, next2, err := g.List("alice", "", 3, next)
	require.NoError(t, err)
	require.Len(t, rest, 1)
	assert.Empty(t, next2)
	assert.NotEqual(t, page[2].ID, rest[0].ID)
}

// warnLog is a logger whose lines a test reads.
func warnLog() (zerolog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return zerolog.New(&buf).Level(zerolog.WarnLevel), &buf
}

// Runs started at the same instant are listed by id, and a cursor
// between them continues at the next id; a cursor older than every run
// gives an empty last page.
func TestListTiesAndOldCursor(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	g := open(t, Config{Now: func() time.Time { return now }})
	ids := []string{"run_000000000000000c", "run_000000000000000a", "run_000000000000000b"}
	for _, id := range ids {
		g.Start(id, "alice", "run_code", "", nil).Finish(StatusCompleted, json.RawMessage(`{}`))
	}
	assert.Equal(t, []string{"run_000000000000000a", "run_000000000000000b", "run_000000000000000c"},
		listAll(t, g, "alice", 1, 5))

	page, next, err := g.List("alice", "", 10, "1.run_0000000000000000")
	require.NoError(t, err)
	assert.Empty(t, page)
	assert.Empty(t, next)
}

// Open keeps the finished records of a store within the retention,
// exactly the retention included, and deletes the older ones; it logs
// nothing when the store reads well.
func TestOpenRetentionBoundary(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	st := NewMemoryStore()
	kept := &Record{ID: NewID(), Owner: "alice", What: "run_code", Status: StatusCompleted, StartedAt: now.Add(-2 * time.Hour),
		FinishedAt: now.Add(-time.Hour)}
	gone := &Record{ID: NewID(), Owner: "alice", What: "run_code", Status: StatusCompleted, StartedAt: now.Add(-2 * time.Hour),
		FinishedAt: now.Add(-time.Hour - time.Nanosecond)}
	require.NoError(t, st.Save(context.Background(), kept))
	require.NoError(t, st.Save(context.Background(), gone))
	log, buf := warnLog()
	g := open(t, Config{Store: st, Now: func() time.Time { return now }, Retention: time.Hour, Logger: log})
	_, err := g.Get("alice", kept.ID)
	assert.NoError(t, err, "finished exactly the retention ago")
	_, err = g.Get("alice", gone.ID)
	assert.ErrorIs(t, err, ErrNotFound)
	recs, err := st.LoadAll(context.Background())
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, kept.ID, recs[0].ID)
	assert.Empty(t, buf.String())
}

// Finished runs expire one by one in the order they finished, loaded
// ones (in whatever order the store lists them) before those that finish
// later, each exactly a retention after it finished.
func TestExpiryFollowsFinishTimes(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	st := NewMemoryStore()
	for _, ago := range []time.Duration{50 * time.Minute, 10 * time.Minute, 30 * time.Minute, 20 * time.Minute, 40 * time.Minute} {
		require.NoError(t, st.Save(context.Background(), &Record{ID: NewID(), Owner: "alice", What: "run_code",
			Status: StatusCompleted, StartedAt: now.Add(-2 * time.Hour), FinishedAt: now.Add(-ago)}))
	}
	g := open(t, Config{Store: st, Now: func() time.Time { return now }, Retention: time.Hour})
	g.Start(NewID(), "alice", "run_code", "", nil).Finish(StatusCompleted, json.RawMessage(`{}`))
	left := func() (listed, stored int) {
		page, _, err := g.List("alice", "", 100, "")
		require.NoError(t, err)
		recs, err := st.LoadAll(context.Background())
		require.NoError(t, err)
		return len(page), len(recs)
	}
	start := now
	for i, want := range []int{6, 5, 4, 3, 2, 1, 0} {
		now = start.Add(time.Duration(i)*10*time.Minute + 5*time.Minute)
		listed, stored := left()
		assert.Equal(t, want, listed, "listed at +%s", now.Sub(start))
		assert.Equal(t, want, stored, "stored at +%s", now.Sub(start))
	}
}
