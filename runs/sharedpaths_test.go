package runs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeShared is a SharedStore in memory that counts saves, answers as a
// test tells it and, unlike a real one, hands out any owner's record, so
// that the registry's own checks are seen.
type fakeShared struct {
	mu       sync.Mutex
	recs     map[string]*Record
	saves    map[string]int
	loadErr  error
	listErr  error
	sweepErr error
	swept    int
	cutoffs  []time.Time
	left     map[string][]time.Duration // per method, the time its context had left
}

func newFakeShared() *fakeShared {
	return &fakeShared{recs: map[string]*Record{}, saves: map[string]int{}, left: map[string][]time.Duration{}}
}

func (f *fakeShared) Save(_ context.Context, rec *Record) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := *rec
	f.recs[rec.ID] = &c
	f.saves[rec.ID]++
	return nil
}

func (f *fakeShared) LoadAll(context.Context) ([]*Record, error) {
	return nil, errors.New("not used with a shared store")
}

func (f *fakeShared) Delete(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.recs, id)
	return nil
}

// deadline notes how long a call's context has left.
func (f *fakeShared) deadline(ctx context.Context, method string) {
	if d, ok := ctx.Deadline(); ok {
		f.left[method] = append(f.left[method], time.Until(d))
	} else {
		f.left[method] = append(f.left[method], -1)
	}
}

func (f *fakeShared) Load(ctx context.Context, _, id string) (*Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deadline(ctx, "Load")
	if f.loadErr != nil {
		return nil, f.loadErr
	}
	rec, ok := f.recs[id]
	if !ok {
		return nil, ErrNotFound
	}
	c := *rec
	c.Events = append([]Event(nil), rec.Events...)
	return &c, nil
}

func (f *fakeShared) List(ctx context.Context, _ string) ([]*Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deadline(ctx, "List")
	if f.listErr != nil {
		return nil, f.listErr
	}
	var out []*Record
	for _, rec := range f.recs {
		c := *rec
		c.Events = nil
		out = append(out, &c)
	}
	return out, nil
}

func (f *fakeShared) Sweep(ctx context.Context, cutoff time.Time, _ Bounds) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deadline(ctx, "Sweep")
	f.cutoffs = append(f.cutoffs, cutoff)
	return f.swept, f.sweepErr
}

func (f *fakeShared) RequestCancel(context.Context, string, string) error { return nil }

func (f *fakeShared) CancelRequests(context.Context) ([]string, error) { return nil, nil }

func (f *fakeShared) ClearCancel(context.Context, string) error { return nil }

func (f *fakeShared) put(rec *Record) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recs[rec.ID] = rec
}

func (f *fakeShared) saveCount(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.saves[id]
}

// A running run of this replica is saved at a checkpoint when it has
// news, and otherwise once per heartbeat: every 10 s, or a third of
// StaleAfter, or half the retention, whichever is shortest, exactly then.
// In virtual time.
func TestCheckpointHeartbeat(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg       Config
		heartbeat time.Duration
	}{
		{"10 s", Config{StaleAfter: time.Minute, Retention: time.Hour}, 10 * time.Second},
		{"StaleAfter/3", Config{StaleAfter: 15 * time.Second, Retention: time.Hour}, 5 * time.Second},
		{"Retention/2", Config{StaleAfter: time.Minute, Retention: 8 * time.Second}, 4 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := newFakeShared()
				cfg := tc.cfg
				cfg.Store, cfg.CheckpointInterval, cfg.SweepInterval = st, time.Second, time.Hour
				g := open(t, cfg)
				defer g.Close()
				r := g.Start(NewID(), "alice", "run_code", "", nil)
				assert.Equal(t, 1, st.saveCount(r.ID()), "saved when it starts")

				time.Sleep(tc.heartbeat - time.Second)
				synctest.Wait()
				assert.Equal(t, 1, st.saveCount(r.ID()), "no news before the heartbeat")
				time.Sleep(time.Second)
				synctest.Wait()
				assert.Equal(t, 2, st.saveCount(r.ID()), "exactly one heartbeat later")

				r.Blob("blob:00", "text/plain", 1)
				time.Sleep(time.Second)
				synctest.Wait()
				assert.Equal(t, 3, st.saveCount(r.ID()), "news: saved at the next checkpoint")
				r.Progress(json.RawMessage(`{"progress":1}`))
				time.Sleep(time.Second)
				synctest.Wait()
				assert.Equal(t, 4, st.saveCount(r.ID()), "new progress is news too")

				r.Finish(StatusCompleted, json.RawMessage(`{}`))
				assert.Equal(t, 5, st.saveCount(r.ID()), "saved when it finishes")
				time.Sleep(2 * tc.heartbeat)
				synctest.Wait()
				assert.Equal(t, 5, st.saveCount(r.ID()), "a finished run is not checkpointed")
			})
		})
	}
}

// Every SweepInterval the records last saved before now minus the
// retention are swept; how many is logged at debug level, a failure as a
// warning, nothing when none were.
func TestSweepCutoffAndLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeShared()
		var buf bytes.Buffer
		g := open(t, Config{Store: st, Retention: time.Hour, SweepInterval: time.Minute, CheckpointInterval: time.Hour,
			Logger: zerolog.New(&buf).Level(zerolog.DebugLevel)})
		defer g.Close()
		start := time.Now()
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Len(t, st.cutoffs, 1)
		assert.Equal(t, start.Add(time.Minute-time.Hour), st.cutoffs[0])
		assert.Empty(t, buf.String(), "nothing swept, nothing logged")

		st.mu.Lock()
		st.swept = 3
		st.mu.Unlock()
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.JSONEq(t, `{"level":"debug","removed":3,"message":"expired run records removed"}`, buf.String())

		buf.Reset()
		st.mu.Lock()
		st.swept, st.sweepErr = 0, errors.New("bucket unavailable")
		st.mu.Unlock()
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.JSONEq(t, `{"level":"warn","error":"bucket unavailable","message":"run record sweep failed; the next one tries again"}`, buf.String())
	})
}

// Another replica's record is the caller's only, and readable within the
// retention only (exactly the retention included); a running record not
// saved for longer than StaleAfter is interrupted, one saved exactly
// StaleAfter ago is still running.
func TestSharedGetBoundaries(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	st := newFakeShared()
	g := open(t, Config{Store: st, Now: func() time.Time { return now }, Retention: time.Hour, StaleAfter: time.Minute,
		CheckpointInterval: time.Hour, SweepInterval: time.Hour})
	defer g.Close()
	finished := &Record{ID: NewID(), Owner: "alice", What: "run_code", Status: StatusCompleted, StartedAt: now.Add(-2 * time.Hour),
		FinishedAt: now.Add(-time.Hour), Result: json.RawMessage(`{"status":"completed"}`)}
	st.put(finished)
	_, err := g.Get("bob", finished.ID)
	assert.ErrorIs(t, err, ErrNotFound, "another owner's record, even from a store that hands it out")
	r, err := g.Get("alice", finished.ID)
	require.NoError(t, err, "at exactly the retention")
	assert.JSONEq(t, `{"status":"completed"}`, string(r.Object()))
	page, _, err := g.List("alice", "", 10, "")
	require.NoError(t, err)
	assert.Len(t, page, 1)
	page, _, err = g.List("bob", "", 10, "")
	require.NoError(t, err)
	assert.Empty(t, page, "another owner's record is not listed")

	now = now.Add(time.Nanosecond)
	_, err = g.Get("alice", finished.ID)
	assert.ErrorIs(t, err, ErrNotFound, "past the retention")
	page, _, err = g.List("alice", "", 10, "")
	require.NoError(t, err)
	assert.Empty(t, page)

	running := &Record{ID: NewID(), Owner: "alice", What: "run_code", Status: StatusRunning, StartedAt: now.Add(-time.Hour),
		Updated: now.Add(-time.Minute)}
	st.put(running)
	r, err = g.Get("alice", running.ID)
	require.NoError(t, err)
	assert.Equal(t, StatusRunning, r.Record().Status, "saved exactly StaleAfter ago: alive")
	page, _, err = g.List("alice", StatusRunning, 10, "")
	require.NoError(t, err)
	assert.Len(t, page, 1)

	now = now.Add(time.Nanosecond)
	r, err = g.Get("alice", running.ID)
	require.NoError(t, err)
	assert.Equal(t, StatusFailed, r.Record().Status, "not saved for longer than StaleAfter: interrupted")
	page, _, err = g.List("alice", StatusRunning, 10, "")
	require.NoError(t, err)
	assert.Empty(t, page)
	page, _, err = g.List("alice", "finished", 10, "")
	require.NoError(t, err)
	assert.Len(t, page, 1)
}

// A store that cannot list fails List; a remote run whose record cannot
// be read again keeps what was read, and Wait ends with its context.
func TestSharedStoreFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeShared()
		g := open(t, Config{Store: st, CheckpointInterval: time.Second, SweepInterval: time.Hour})
		defer g.Close()
		rec := &Record{ID: NewID(), Owner: "alice", What: "run_code", Status: StatusRunning, StartedAt: time.Now(), Updated: time.Now()}
		st.put(rec)

		st.mu.Lock()
		st.listErr = errors.New("bucket unavailable")
		st.mu.Unlock()
		_, _, err := g.List("alice", "", 10, "")
		assert.EqualError(t, err, "bucket unavailable")

		r, err := g.Get("alice", rec.ID)
		require.NoError(t, err)
		// Read again every second, still running and without events.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		assert.ErrorIs(t, r.Wait(ctx), context.DeadlineExceeded)
		assert.Equal(t, StatusRunning, r.Record().Status)

		st.mu.Lock()
		st.loadErr = errors.New("bucket unavailable")
		st.mu.Unlock()
		ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		assert.ErrorIs(t, r.Wait(ctx), context.DeadlineExceeded)
		assert.Equal(t, StatusRunning, r.Record().Status)

		// Readable again, and finished: the waiter learns it at the
		// next poll, and a follower gets the finished event.
		done := *rec
		done.Status, done.FinishedAt, done.Updated = StatusCompleted, time.Now(), time.Now()
		done.Events = []Event{{Seq: 1, Type: EventFinished, Data: json.RawMessage(`{"status":"completed"}`)}}
		st.mu.Lock()
		st.loadErr = nil
		st.mu.Unlock()
		st.put(&done)
		require.NoError(t, r.Wait(context.Background()))
		assert.Equal(t, StatusCompleted, r.Record().Status)
		assert.Equal(t, []Event{done.Events[0]}, collect(t, r, 0))
		r.refresh(context.Background()) // a finished run is not read again
		assert.Equal(t, StatusCompleted, r.Record().Status)
	})
}

// Every call to a shared store is bounded by 30 s: reading a run, listing
// runs, re-reading a remote run and sweeping. In virtual time.
func TestSharedStoreCallsBoundedBy30s(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeShared()
		g := open(t, Config{Store: st, CheckpointInterval: time.Second, SweepInterval: time.Minute})
		defer g.Close()
		rec := &Record{ID: NewID(), Owner: "alice", What: "run_code", Status: StatusRunning, StartedAt: time.Now(), Updated: time.Now()}
		st.put(rec)
		r, err := g.Get("alice", rec.ID)
		require.NoError(t, err)
		_, _, err = g.List("alice", "", 10, "")
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(1500*time.Millisecond, cancel)    // no deadline of its own to pass on
		assert.ErrorIs(t, r.Wait(ctx), context.Canceled) // re-reads it once, at 1 s
		time.Sleep(time.Minute)
		synctest.Wait()
		st.mu.Lock()
		defer st.mu.Unlock()
		assert.Equal(t, []time.Duration{30 * time.Second, 30 * time.Second}, st.left["Load"], "Get, then the re-read")
		assert.Equal(t, []time.Duration{30 * time.Second}, st.left["List"])
		require.NotEmpty(t, st.left["Sweep"])
		assert.Equal(t, 30*time.Second, st.left["Sweep"][0])
	})
}
