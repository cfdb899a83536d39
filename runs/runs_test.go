package runs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T, cfg Config) *Registry {
	t.Helper()
	g, err := Open(context.Background(), cfg)
	require.NoError(t, err)
	return g
}

func collect(t *testing.T, r *Run, after uint64) []Event {
	t.Helper()
	var evs []Event
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // safety net only
	defer cancel()
	require.NoError(t, r.Follow(ctx, after, func(e Event) error { evs = append(evs, e); return nil }))
	return evs
}

func logText(evs []Event) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Type == EventLog {
			var d struct{ Text string }
			_ = json.Unmarshal(e.Data, &d)
			b.WriteString(d.Text)
		}
	}
	return b.String()
}

// A follower that starts before the first event sees every event once, in
// order, seq without holes, started first and finished last.
func TestFollowOrderAndSeq(t *testing.T) {
	g := open(t, Config{})
	r := g.Start(NewID(), "alice", "run_code", "1", nil)
	got := make(chan []Event, 1)
	go func() { got <- collect(t, r, 0) }()
	r.Started(0)
	for i := range 100 {
		r.Log(StreamStdout, fmt.Appendf(nil, "line %d\n", i))
		r.Progress(json.RawMessage(fmt.Sprintf(`{"progress":%d,"total":100,"message":null}`, i)))
	}
	r.Blob("blob:00", "text/plain", 3)
	full := string(r.FullLogs())
	r.Finish(StatusCompleted, json.RawMessage(`{"status":"completed"}`))
	require.Nil(t, r.FullLogs(), "a finished run lets its full logs go")
	evs := <-got
	require.Equal(t, EventStarted, evs[0].Type)
	require.Equal(t, EventFinished, evs[len(evs)-1].Type)
	for i, e := range evs {
		require.Equal(t, uint64(i+1), e.Seq)
	}
	var want strings.Builder
	for i := range 100 {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	require.Equal(t, want.String(), logText(evs))
	require.Equal(t, want.String(), full)
	// A late follower replays the same events from any point.
	require.Equal(t, evs[3:], collect(t, r, 3))
	require.Empty(t, collect(t, r, evs[len(evs)-1].Seq))
}

// Events past the retention bound are replaced by one gap event that
// names exactly the seqs dropped.
func TestFollowGap(t *testing.T) {
	g := open(t, Config{MaxEvents: 10})
	r := g.Start(NewID(), "alice", "run_code", "", nil)
	r.Started(0)
	for i := range 30 {
		r.Blob(fmt.Sprintf("blob:%02d", i), "text/plain", 1)
	}
	r.Finish(StatusCompleted, json.RawMessage(`{}`))
	evs := collect(t, r, 0)
	require.Equal(t, EventGap, evs[0].Type)
	require.JSONEq(t, `{"from_seq":1,"to_seq":22}`, string(evs[0].Data))
	require.Equal(t, uint64(22), evs[0].Seq)
	require.Equal(t, uint64(23), evs[1].Seq)
	require.Equal(t, EventFinished, evs[len(evs)-1].Type)
}

// Log bytes split inside a UTF-8 sequence are never cut apart.
func TestLogKeepsUTF8Whole(t *testing.T) {
	g := open(t, Config{})
	r := g.Start(NewID(), "alice", "run_code", "", nil)
	text := []byte(strings.Repeat("é€", 10_000))
	for len(text) > 0 {
		n := min(7, len(text))
		r.Log(StreamStdout, text[:n])
		text = text[n:]
	}
	r.Finish(StatusCompleted, json.RawMessage(`{}`))
	require.Equal(t, strings.Repeat("é€", 10_000), logText(collect(t, r, 0)))
}

// Each stream coalesces on its own: writes that alternate between the
// streams within one flush interval give one event per stream, in the
// order the streams first wrote, with every stream's text whole; the full
// logs interleave the streams in the order written.
func TestLogCoalescesPerStream(t *testing.T) {
	g := open(t, Config{})
	r := g.Start(NewID(), "alice", "run_code", "", nil)
	var want strings.Builder
	texts := map[string]*strings.Builder{}
	for i := range 30 {
		for _, s := range []string{StreamStderr, StreamStdout, StreamLog} {
			line := fmt.Sprintf("%s %d\n", s, i)
			r.Log(s, []byte(line))
			want.WriteString(line)
			if texts[s] == nil {
				texts[s] = &strings.Builder{}
			}
			texts[s].WriteString(line)
		}
	}
	require.Equal(t, want.String(), string(r.FullLogs()))
	r.Finish(StatusCompleted, json.RawMessage(`{}`))
	var order []string
	got := map[string]string{}
	for _, e := range collect(t, r, 0) {
		if e.Type != EventLog {
			continue
		}
		var d struct{ Stream, Text string }
		require.NoError(t, json.Unmarshal(e.Data, &d))
		order = append(order, d.Stream)
		got[d.Stream] += d.Text
	}
	// The loop takes far less than the flush interval on any machine
	// that gets through it at all; a slower one may flush in between,
	// which still gives the streams whole and in their first order.
	require.Equal(t, []string{StreamStderr, StreamStdout, StreamLog}, order[:3])
	for s, b := range texts {
		require.Equal(t, b.String(), got[s], s)
	}
}

// Runs are visible to their owner only; Cancel reaches the run's context
// with ErrCanceled.
func TestIsolationAndCancel(t *testing.T) {
	g := open(t, Config{})
	ctx, cancel := context.WithCancelCause(context.Background())
	r := g.Start(NewID(), "alice", "run_code", "", cancel)
	_, err := g.Get("bob", r.ID())
	require.ErrorIs(t, err, ErrNotFound)
	_, err = g.Get("alice", "run_0000000000000000")
	require.ErrorIs(t, err, ErrNotFound)
	got, err := g.Get("alice", r.ID())
	require.NoError(t, err)
	got.Cancel()
	require.ErrorIs(t, context.Cause(ctx), ErrCanceled)
	r.Finish(StatusFailed, json.RawMessage(`{"status":"failed"}`))
	r.Cancel() // finished: nothing happens
	page, _, err := g.List("bob", "", 10, "")
	require.NoError(t, err)
	require.Empty(t, page)
}

// List pages newest first with a cursor, filters by status and refuses a
// cursor it did not hand out.
func TestList(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	g := open(t, Config{Now: func() time.Time { return now }})
	var ids []string
	for i := range 5 {
		now = now.Add(time.Second)
		r := g.Start(NewID(), "alice", "run_code", "", nil)
		ids = append([]string{r.ID()}, ids...)
		if i%2 == 0 {
			r.Finish(StatusCompleted, json.RawMessage(`{}`))
		}
	}
	require.Equal(t, ids, listAll(t, g, "alice", 2, 10))
	running, _, err := g.List("alice", StatusRunning, 10, "")
	require.NoError(t, err)
	require.Len(t, running, 2)
	finished, _, err := g.List("alice", "finished", 10, "")
	require.NoError(t, err)
	require.Len(t, finished, 3)
	for _, bad := range []string{"x", "1.run_zz", "abc.run_0000000000000000"} {
		_, _, err = g.List("alice", "", 10, bad)
		require.ErrorIs(t, err, ErrBadCursor)
	}
}

// After a restart a FileStore's finished runs are answered as before, a
// run that was in progress is failed INTERRUPTED, and runs past retention
// are gone.
func TestFileStoreRestart(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	st, err := NewFileStore(dir)
	require.NoError(t, err)
	g := open(t, Config{Store: st, Now: clock, Retention: time.Hour})
	done := g.Start(NewID(), "alice", "run_code", "", nil)
	done.Started(0)
	done.Log(StreamStdout, []byte("hello\n"))
	done.Finish(StatusCompleted, json.RawMessage(`{"status":"completed","run_id":"x"}`))
	lost := g.Start(NewID(), "alice", "acme.x@1.0.0", "", nil)
	old := g.Start(NewID(), "alice", "run_code", "", nil)
	old.Finish(StatusCompleted, json.RawMessage(`{}`))

	now = now.Add(30 * time.Minute)
	st2, err := NewFileStore(dir)
	require.NoError(t, err)
	g2 := open(t, Config{Store: st2, Now: clock, Retention: time.Hour})
	r, err := g2.Get("alice", done.ID())
	require.NoError(t, err)
	require.JSONEq(t, `{"status":"completed","run_id":"x"}`, string(r.Object()))
	require.Equal(t, "hello\n", logText(collect(t, r, 0)))
	r, err = g2.Get("alice", lost.ID())
	require.NoError(t, err)
	var obj struct {
		Status string
		Error  struct{ Type string }
		Retry  *struct {
			MaxAttempts int `json:"max_attempts"`
		}
	}
	require.NoError(t, json.Unmarshal(r.Object(), &obj))
	require.Equal(t, StatusFailed, obj.Status)
	require.Equal(t, "INTERRUPTED", obj.Error.Type)
	require.NotNil(t, obj.Retry)
	evs := collect(t, r, 0)
	require.Equal(t, EventFinished, evs[len(evs)-1].Type)

	now = now.Add(2 * time.Hour)
	g3 := open(t, Config{Store: st2, Now: clock, Retention: time.Hour})
	_, err = g3.Get("alice", done.ID())
	require.ErrorIs(t, err, ErrNotFound)
	left, err := st2.LoadAll(context.Background())
	require.NoError(t, err)
	require.Empty(t, left)
}

// Ids that are not run ids never reach the file system.
func TestFileStoreRejectsBadIDs(t *testing.T) {
	st, err := NewFileStore(t.TempDir())
	require.NoError(t, err)
	for _, id := range []string{"../x", "run_", "run_ZZZZZZZZZZZZZZZZ", "run_0123456789abcdef/.."} {
		require.ErrorIs(t, st.Save(context.Background(), &Record{ID: id}), ErrNotFound, id)
		require.ErrorIs(t, st.Delete(context.Background(), id), ErrNotFound, id)
	}
}

// Under pressure a follower skips progress that later progress supersedes,
// and gap events name exactly the seqs skipped; nothing else is skipped,
// and every seq is accounted for.
func TestFollowCompactsProgressUnderPressure(t *testing.T) {
	g := open(t, Config{})
	r := g.Start(NewID(), "alice", "run_code", "", nil)
	r.Started(0)
	for i := range 5 {
		r.emit(EventProgress, map[string]int{"progress": i})
	}
	r.Blob("blob:00", "text/plain", 1)
	for i := range 3 {
		r.emit(EventProgress, map[string]int{"progress": 10 + i})
	}
	r.Finish(StatusCompleted, json.RawMessage(`{}`))
	evs, got := followPressed(t, r, func(int) bool { return true })
	// 1 started, 2-6 progress, 7 blob, 8-10 progress, 11 finished.
	require.Equal(t, []string{"1:started", "6:gap", "7:blob", "9:gap", "10:progress", "11:finished"}, got)
	require.JSONEq(t, `{"from_seq":2,"to_seq":6}`, string(evs[1].Data))
	require.JSONEq(t, `{"from_seq":8,"to_seq":9}`, string(evs[3].Data))
	require.JSONEq(t, `{"progress":12}`, string(evs[4].Data))
	// Without pressure, or on replay, every event is there.
	require.Len(t, collect(t, r, 0), 11)
}

// Under pressure each stream keeps only its newest maxLogEventJSON bytes of
// encoded text per batch, adjacent kept log events of one stream are merged (their
// from_seq names the first seq they stand for), and gap events name the
// rest: every seq is accounted for, in order.
func TestFollowMergesLogsUnderPressure(t *testing.T) {
	g := open(t, Config{})
	r := g.Start(NewID(), "alice", "run_code", "", nil)
	line := strings.Repeat("x", 1023) + "\n"
	logEv := func(stream, text string) { r.emit(EventLog, map[string]string{"stream": stream, "text": text}) }
	r.Started(0)   // 1
	for range 20 { // 2..21
		logEv(StreamStdout, line)
	}
	logEv(StreamStderr, "oops\n")                        // 22
	r.emit(EventProgress, map[string]int{"progress": 1}) // 23
	logEv(StreamStdout, "a\n")                           // 24
	logEv(StreamStdout, "b\n")                           // 25
	r.emit(EventProgress, map[string]int{"progress": 2}) // 26
	logEv(StreamStdout, "c\n")                           // 27
	r.Finish(StatusCompleted, json.RawMessage(`{}`))     // 28
	evs, got := followPressed(t, r, func(int) bool { return true })
	require.Equal(t, []string{"1:started", "10:gap", "21:log", "22:log", "23:gap", "25:log", "26:progress", "27:log", "28:finished"}, got)
	require.JSONEq(t, `{"from_seq":2,"to_seq":10}`, string(evs[1].Data))
	var merged logFields
	require.NoError(t, json.Unmarshal(evs[2].Data, &merged))
	// 11 lines of 1,025 encoded bytes, and the 9 of a, b and c, fit 12 KiB.
	require.Equal(t, logFields{Stream: StreamStdout, Text: strings.Repeat(line, 11), FromSeq: 11}, merged)
	require.JSONEq(t, `{"stream":"stderr","text":"oops\n"}`, string(evs[3].Data))
	require.JSONEq(t, `{"stream":"stdout","text":"a\nb\n","from_seq":24}`, string(evs[5].Data))
	require.JSONEq(t, `{"stream":"stdout","text":"c\n"}`, string(evs[7].Data))
	// Whatever was merged or dropped is still there for a follower that
	// keeps up.
	require.Equal(t, strings.Repeat(line, 20)+"oops\na\nb\nc\n", logText(collect(t, r, 0)))
}

// A follower that falls behind in the middle of a batch compacts the rest
// of it; one that keeps up gets every event.
func TestFollowCompactsFromWhereItFellBehind(t *testing.T) {
	g := open(t, Config{})
	r := g.Start(NewID(), "alice", "run_code", "", nil)
	r.Started(0)
	for i := range 10 {
		r.emit(EventProgress, map[string]int{"progress": i})
	}
	r.Finish(StatusCompleted, json.RawMessage(`{}`))
	_, got := followPressed(t, r, func(sent int) bool { return sent >= 3 })
	// 1 started, 2-11 progress, 12 finished.
	require.Equal(t, []string{"1:started", "2:progress", "3:progress", "10:gap", "11:progress", "12:finished"}, got)
}

// followPressed follows r to its end with FollowCompacting, pressed
// being told how many events were sent so far, and returns the events
// sent and their "seq:type".
func followPressed(t *testing.T, r *Run, pressed func(sent int) bool) ([]Event, []string) {
	t.Helper()
	var evs []Event
	var got []string
	require.NoError(t, r.FollowCompacting(context.Background(), 0, func() bool { return pressed(len(evs)) },
		func(e Event) error {
			evs = append(evs, e)
			got = append(got, fmt.Sprintf("%d:%s", e.Seq, e.Type))
			return nil
		}))
	return evs, got
}

// listAll pages through an identity's runs, size at a time, following the
// cursor for at most pages pages, and returns their ids in order.
func listAll(t *testing.T, g *Registry, identity string, size, pages int) []string {
	t.Helper()
	var seen []string
	cursor := ""
	for range pages {
		page, next, err := g.List(identity, "", size, cursor)
		require.NoError(t, err)
		for _, s := range page {
			seen = append(seen, s.ID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	return seen
}
