package runs

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// finishRun runs one run of owner to its end, printing logBytes bytes.
func finishRun(g *Registry, owner string, logBytes int) *Run {
	r := g.Start(NewID(), owner, "run_code", "", nil)
	r.Started(0)
	if logBytes > 0 {
		r.Log(StreamStdout, []byte(strings.Repeat("x", logBytes-1)+"\n"))
	}
	r.Finish(StatusCompleted, json.RawMessage(`{"status":"completed"}`))
	return r
}

func listIDs(t *testing.T, g *Registry, owner string) []string {
	t.Helper()
	return listAll(t, g, owner, 100, 100)
}

// Past a bound, the oldest finished records go first, from the registry
// and from the store: per identity and in all, in count and in bytes.
func TestRecordBounds(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { now = now.Add(time.Millisecond); return now }
	for _, tc := range []struct {
		name   string
		bounds Bounds
		// runs alice, then bob, make; how many of each are left
		alice, bob, leftAlice, leftBob int
		logBytes                       int
	}{
		{"owner count", Bounds{MaxOwnerRecords: 5}, 12, 3, 5, 3, 0},
		{"total count", Bounds{MaxRecords: 6}, 8, 3, 3, 3, 0},
		{"owner bytes", Bounds{MaxOwnerBytes: 3 << 20}, 8, 1, 2, 1, 1 << 20},
		{"total bytes", Bounds{MaxBytes: 4 << 20}, 6, 2, 1, 2, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := NewFileStore(t.TempDir())
			require.NoError(t, err)
			g := open(t, Config{Store: st, Now: clock, Bounds: tc.bounds, MaxEventBytes: 4 << 20, MaxLogBytes: 4 << 20})
			var alice []string
			for range tc.alice {
				alice = append(alice, finishRun(g, "alice", tc.logBytes).ID())
			}
			running := g.Start(NewID(), "alice", "run_code", "", nil) // never removed, nor counted
			defer running.Finish(StatusFailed, json.RawMessage(`{}`))
			for range tc.bob {
				finishRun(g, "bob", tc.logBytes)
			}
			left := listIDs(t, g, "alice")
			require.Len(t, left, tc.leftAlice+1, "the run in progress and the newest finished ones")
			assert.Equal(t, running.ID(), left[0])
			for i, id := range alice[len(alice)-tc.leftAlice:] {
				assert.Equal(t, id, left[len(left)-1-i], "newest first")
			}
			_, err = g.Get("alice", alice[0])
			assert.ErrorIs(t, err, ErrNotFound, "the oldest went first")
			assert.Len(t, listIDs(t, g, "bob"), tc.leftBob)
			recs, err := st.LoadAll(context.Background())
			require.NoError(t, err)
			assert.Len(t, recs, tc.leftAlice+tc.leftBob+1, "the store keeps what the registry does")
		})
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

// After a restart the registry holds a summary of each record, not its
// events: the memory it takes does not grow with what the runs printed.
// A run read lazily still gives its run object and every event.
func TestRestartHoldsSummariesOnly(t *testing.T) {
	dir := t.TempDir()
	st, err := NewFileStore(dir)
	require.NoError(t, err)
	const n, logBytes = 40, 1 << 20
	line := strings.Repeat("y", 1023) + "\n"
	ids := make([]string, n)
	for i := range n {
		rec := &Record{ID: NewID(), Owner: fmt.Sprintf("owner-%d", i%4), What: "run_code", Status: StatusCompleted,
			StartedAt: time.Now(), FinishedAt: time.Now(), Result: json.RawMessage(`{"status":"completed"}`)}
		for j := range logBytes / len(line) {
			raw, _ := json.Marshal(map[string]string{"stream": StreamStdout, "text": line})
			rec.Events = append(rec.Events, Event{Seq: uint64(j + 1), Type: EventLog, Data: raw})
		}
		require.NoError(t, st.Save(context.Background(), rec))
		ids[i] = rec.ID
	}

	before := heldBytes()
	st2, err := NewFileStore(dir)
	require.NoError(t, err)
	g := open(t, Config{Store: st2})
	held := int64(heldBytes()) - int64(before)
	t.Logf("registry of %d records of %d log bytes each holds %d bytes", n, logBytes, held)
	assert.Less(t, held, int64(n*4<<10), "a few KiB per record at most, not its %d bytes of logs", logBytes)

	r, err := g.Get("owner-1", ids[1])
	require.NoError(t, err)
	assert.JSONEq(t, `{"status":"completed"}`, string(r.Object()))
	evs := collect(t, r, 0)
	require.Len(t, evs, logBytes/len(line))
	assert.Equal(t, strings.Repeat(line, logBytes/len(line)), logText(evs), "watch_run replays the whole log")
	_, err = g.Get("owner-2", ids[1])
	assert.ErrorIs(t, err, ErrNotFound, "another identity's")
	runtime.KeepAlive(g)
}

// Without bounds configured, an identity keeps its last
// DefaultMaxOwnerRecords finished runs.
func TestRecordBoundsDefault(t *testing.T) {
	g := open(t, Config{})
	first := finishRun(g, "alice", 10).ID()
	for range 1000 {
		finishRun(g, "alice", 10)
	}
	assert.Equal(t, 1000, len(listAll(t, g, "alice", 100, 20)))
	_, err := g.Get("alice", first)
	assert.ErrorIs(t, err, ErrNotFound, "the oldest went first")
}

// DropLogs replaces each run of retained log events by one gap; a
// follower that already had some of them gets a gap from where it is.
func TestDropLogs(t *testing.T) {
	g := open(t, Config{})
	r := g.Start(NewID(), "alice", "run_code", "", nil)
	r.Started(0)
	r.Log(StreamStdout, []byte(strings.Repeat("a", maxLogEventJSON)))
	r.Log(StreamStdout, []byte(strings.Repeat("b", maxLogEventJSON)))
	r.Blob("blob:1", "text/plain", 1)
	r.Log(StreamStderr, []byte(strings.Repeat("c", maxLogEventJSON)))
	r.DropLogs()
	r.Finish(StatusCompleted, json.RawMessage(`{}`))
	got, err := g.Get("alice", r.ID())
	require.NoError(t, err)
	assert.Equal(t, []string{"1:started", "3:gap", "4:blob", "5:gap", "6:finished"}, types(got))
	evs := collect(t, got, 0)
	assert.JSONEq(t, `{"from_seq":2,"to_seq":3}`, string(evs[1].Data))
	assert.Equal(t, uint64(3), evs[1].Seq)
	assert.JSONEq(t, `{"from_seq":5,"to_seq":5}`, string(evs[3].Data))
	evs = collect(t, got, 2)
	assert.JSONEq(t, `{"from_seq":3,"to_seq":3}`, string(evs[0].Data), "the gap starts after what was sent")
}

// When the logs retained were the first events retained (the older ones
// evicted), the gap that replaces them leads the record: a follower from
// before it gets the evicted span, then that gap, seq accounted for once.
func TestDropLogsAfterEviction(t *testing.T) {
	g := open(t, Config{MaxEvents: 3})
	r := g.Start(NewID(), "alice", "run_code", "", nil)
	r.Started(0)
	for _, c := range "abcde" {
		r.Log(StreamStdout, []byte(strings.Repeat(string(c), maxLogEventJSON)))
	}
	r.DropLogs()
	r.Finish(StatusCompleted, json.RawMessage(`{}`))
	got, err := g.Get("alice", r.ID())
	require.NoError(t, err)
	evs := collect(t, got, 1)
	require.Len(t, evs, 3, "the evicted span, the dropped logs, finished")
	assert.JSONEq(t, `{"from_seq":2,"to_seq":3}`, string(evs[0].Data))
	assert.JSONEq(t, `{"from_seq":4,"to_seq":6}`, string(evs[1].Data))
	assert.Equal(t, EventFinished, evs[2].Type)
}
