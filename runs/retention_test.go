package runs

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// types is the "seq:type" of each event a run retains.
func types(r *Run) []string {
	var out []string
	for _, e := range r.Record().Events {
		out = append(out, strings.Join([]string{itoa(e.Seq), e.Type}, ":"))
	}
	return out
}

func itoa(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// blobWeight is what a blob event of Blob("blob:00", "text/plain", 1)
// counts against MaxEventBytes: its JSON data and 64 bytes.
func blobWeight(t *testing.T) int {
	raw, err := json.Marshal(map[string]any{"blob_id": "blob:00", "kind": "text/plain", "size_bytes": 1})
	require.NoError(t, err)
	return len(raw) + 64
}

// At least the last MaxEvents events are retained: exactly that many
// stay, the one before them goes.
func TestRetainedEventsBoundary(t *testing.T) {
	g := open(t, Config{MaxEvents: 3})
	r := g.Start(NewID(), "alice", "run_code", "", nil)
	for range 3 {
		r.Blob("blob:00", "text/plain", 1)
	}
	assert.Equal(t, []string{"1:blob", "2:blob", "3:blob"}, types(r), "exactly MaxEvents")
	r.Blob("blob:00", "text/plain", 1)
	assert.Equal(t, []string{"2:blob", "3:blob", "4:blob"}, types(r), "one more")
	r.Finish(StatusCompleted, json.RawMessage(`{}`))
}

// Events are retained up to MaxEventBytes, each counting its JSON data
// and 64 bytes: events of exactly that many bytes stay, one byte less
// and the oldest goes.
func TestRetainedBytesBoundary(t *testing.T) {
	w := blobWeight(t)
	for _, tc := range []struct {
		limit int
		want  []string
	}{
		{2 * w, []string{"1:blob", "2:blob"}},
		{2*w - 1, []string{"2:blob"}},
	} {
		g := open(t, Config{MaxEventBytes: tc.limit})
		r := g.Start(NewID(), "alice", "run_code", "", nil)
		r.Blob("blob:00", "text/plain", 1)
		r.Blob("blob:00", "text/plain", 1)
		assert.Equal(t, tc.want, types(r), "limit %d", tc.limit)
		// The bytes of a dropped event are given back: the next event
		// drops only what it must.
		r.Blob("blob:00", "text/plain", 1)
		assert.Len(t, types(r), len(tc.want), "limit %d", tc.limit)
		r.Finish(StatusCompleted, json.RawMessage(`{}`))
	}
}

// A log event counts the bytes the run wrote, not their JSON: 100 bytes
// that JSON writes as 600 weigh 164.
func TestLogEventWeighsTheBytesWritten(t *testing.T) {
	w := blobWeight(t)
	text := strings.Repeat("\x01", 100)
	for _, tc := range []struct {
		limit int
		want  []string
	}{
		{164 + w, []string{"1:log", "2:blob"}},
		{164 + w - 1, []string{"2:blob"}},
	} {
		g := open(t, Config{MaxEventBytes: tc.limit})
		r := g.Start(NewID(), "alice", "run_code", "", nil)
		r.Log(StreamStdout, []byte(text))
		r.Blob("blob:00", "text/plain", 1) // flushes the log first
		assert.Equal(t, tc.want, types(r), "limit %d", tc.limit)
		r.Finish(StatusCompleted, json.RawMessage(`{}`))
	}
}

// The newest event is retained whatever its size, until another comes.
func TestOversizedEventRetainedAlone(t *testing.T) {
	g := open(t, Config{MaxEventBytes: 10})
	r := g.Start(NewID(), "alice", "run_code", "", nil)
	r.Blob("blob:00", "text/plain", 1)
	assert.Equal(t, []string{"1:blob"}, types(r))
	r.Finish(StatusCompleted, json.RawMessage(`{}`))
	assert.Equal(t, []string{"2:finished"}, types(r))
	evs := collect(t, r, 0)
	require.Len(t, evs, 2)
	assert.JSONEq(t, `{"from_seq":1,"to_seq":1}`, string(evs[0].Data))
}

// The full logs keep the first MaxLogBytes bytes written, exactly.
func TestFullLogsCap(t *testing.T) {
	g := open(t, Config{MaxLogBytes: 10})
	r := g.Start(NewID(), "alice", "run_code", "", nil)
	r.Log(StreamStdout, []byte("123456"))
	assert.Equal(t, "123456", string(r.FullLogs()))
	r.Log(StreamStderr, []byte("789abc"))
	assert.Equal(t, "123456789a", string(r.FullLogs()))
	r.Log(StreamStdout, []byte("x"))
	assert.Equal(t, "123456789a", string(r.FullLogs()))
	r.Finish(StatusCompleted, json.RawMessage(`{}`))
	assert.Equal(t, "123456x789abc", logText(collect(t, r, 0)), "the events keep everything, stream by stream")
}

// A character cut by the pipe waits for its end when something else
// flushes the output: the text before it is emitted, the character
// whole after.
func TestCutCharacterWaitsAcrossAFlush(t *testing.T) {
	g := open(t, Config{})
	r := g.Start(NewID(), "alice", "run_code", "", nil)
	r.Log(StreamStdout, []byte("\xc3")) // the first byte of é, alone
	r.Blob("blob:00", "text/plain", 1)
	assert.Equal(t, []string{"1:blob"}, types(r), "nothing to emit yet")
	r.Log(StreamStdout, []byte("\xa9ab\xe2\x82")) // é's end, ab, two bytes of €
	r.Blob("blob:01", "text/plain", 1)
	assert.Equal(t, []string{"1:blob", "2:log", "3:blob"}, types(r))
	r.Log(StreamStdout, []byte("\xac"))
	r.Finish(StatusCompleted, json.RawMessage(`{}`))
	evs := collect(t, r, 0)
	assert.JSONEq(t, `{"stream":"stdout","text":"éab"}`, string(evs[1].Data))
	assert.Equal(t, "éab€", logText(evs))
}

// completeUTF8 leaves out only a sequence cut at the end.
func TestCompleteUTF8(t *testing.T) {
	for in, want := range map[string]int{
		"":                 0,
		"a":                1,
		"\xc3":             0,
		"a\xc3":            1,
		"aé":               3,
		"\xf0\x9f\x99":     0,
		"a\xf0\x9f\x99":    1,
		"\xf0\x9f\x99\x82": 4,
		"\x80\x80\x80\x80": 4, // no start in reach: nothing to wait for
	} {
		assert.Equal(t, want, completeUTF8([]byte(in)), "%q", in)
	}
}

// Output is emitted once 12 KiB of it is pending once encoded, at once;
// below that it waits for the 50 ms flush. Progress is emitted at once
// when the last progress event is 50 ms old or more, else at the flush.
// In virtual time (testing/synctest).
func TestCoalescingBoundaries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := open(t, Config{})
		r := g.Start(NewID(), "alice", "run_code", "", nil)
		r.Log(StreamStdout, []byte(strings.Repeat("a", 12<<10-1)))
		assert.Empty(t, types(r), "one byte short of 12 KiB: waits")
		r.Log(StreamStdout, []byte("b"))
		assert.Equal(t, []string{"1:log"}, types(r), "exactly 12 KiB: at once")

		r.Log(StreamStdout, []byte("c"))
		time.Sleep(49 * time.Millisecond)
		synctest.Wait()
		assert.Len(t, types(r), 1, "49 ms: still pending")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.Equal(t, []string{"1:log", "2:log"}, types(r), "flushed at 50 ms")

		r.Progress(json.RawMessage(`{"progress":1}`))
		assert.Len(t, types(r), 3, "the first progress: at once")
		r.Progress(json.RawMessage(`{"progress":2}`))
		assert.Len(t, types(r), 3, "the next within 50 ms waits")
		time.Sleep(50 * time.Millisecond)
		synctest.Wait()
		assert.Len(t, types(r), 4, "flushed at 50 ms")
		time.Sleep(50 * time.Millisecond)
		r.Progress(json.RawMessage(`{"progress":3}`))
		assert.Len(t, types(r), 5, "50 ms after the last progress event: at once")
		r.Finish(StatusCompleted, json.RawMessage(`{}`))
	})
}

// Under pressure a stream keeps the newest log events whose text fits
// 12 KiB once encoded: exactly 12 KiB of them are kept (and merged), one
// byte more and the oldest goes.
func TestCompactKeepsExactly12KiB(t *testing.T) {
	for _, tc := range []struct {
		older int
		want  []string
	}{
		{12<<10 - 100, []string{"1:started", "3:log", "4:finished"}},
		{12<<10 - 99, []string{"1:started", "2:gap", "3:log", "4:finished"}},
	} {
		g := open(t, Config{})
		r := g.Start(NewID(), "alice", "run_code", "", nil)
		r.Started(0)
		r.emit(EventLog, map[string]string{"stream": StreamStdout, "text": strings.Repeat("a", tc.older)})
		r.emit(EventLog, map[string]string{"stream": StreamStdout, "text": strings.Repeat("b", 100)})
		r.Finish(StatusCompleted, json.RawMessage(`{}`))
		evs, got := followPressed(t, r, func(int) bool { return true })
		assert.Equal(t, tc.want, got, "older text of %d bytes", tc.older)
		if len(evs) == 3 {
			var f logFields
			require.NoError(t, json.Unmarshal(evs[1].Data, &f))
			assert.Equal(t, logFields{Stream: StreamStdout, Text: strings.Repeat("a", tc.older) + strings.Repeat("b", 100), FromSeq: 2}, f)
		}
	}
}

// After a flush, the streams are emitted in the order of their first
// pending byte again: a stream that was emitted before keeps no place.
func TestStreamOrderAfterAFlush(t *testing.T) {
	g := open(t, Config{})
	r := g.Start(NewID(), "alice", "run_code", "", nil)
	r.Log(StreamStdout, []byte("a"))
	r.Log(StreamStderr, []byte("b"))
	r.Blob("blob:00", "text/plain", 1) // flushes a, then b
	r.Log(StreamStderr, []byte("c"))
	r.Log(StreamStdout, []byte("d"))
	r.Finish(StatusCompleted, json.RawMessage(`{}`))
	var got []string
	for _, e := range collect(t, r, 0) {
		if e.Type == EventLog {
			var f logFields
			require.NoError(t, json.Unmarshal(e.Data, &f))
			got = append(got, f.Stream+":"+f.Text)
		} else {
			got = append(got, e.Type)
		}
	}
	assert.Equal(t, []string{"stdout:a", "stderr:b", "blob", "stderr:c", "stdout:d", "finished"}, got)
}

// A batch that ends with log events of one stream (the run still going)
// merges them to its end.
func TestCompactMergesToTheEndOfABatch(t *testing.T) {
	g := open(t, Config{})
	r := g.Start(NewID(), "alice", "run_code", "", nil)
	r.Started(0)
	r.emit(EventLog, map[string]string{"stream": StreamStdout, "text": "a\n"})
	r.emit(EventLog, map[string]string{"stream": StreamStdout, "text": "b\n"})
	var got []string
	var merged json.RawMessage
	require.NoError(t, r.FollowCompacting(context.Background(), 0, func() bool { return true }, func(e Event) error {
		got = append(got, itoa(e.Seq)+":"+e.Type)
		if e.Type == EventLog {
			merged = e.Data
			r.Finish(StatusCompleted, json.RawMessage(`{}`))
		}
		return nil
	}))
	assert.Equal(t, []string{"1:started", "3:log", "4:finished"}, got)
	assert.JSONEq(t, `{"stream":"stdout","text":"a\nb\n","from_seq":2}`, string(merged))
}

// Log events of one stream with only dropped progress between them are
// merged, the merged event standing for the progress too (from_seq).
func TestCompactMergesAcrossDroppedProgress(t *testing.T) {
	g := open(t, Config{})
	r := g.Start(NewID(), "alice", "run_code", "", nil)
	r.Started(0)                                                               // 1
	r.emit(EventLog, map[string]string{"stream": StreamStdout, "text": "a\n"}) // 2
	r.emit(EventProgress, map[string]int{"progress": 1})                       // 3, superseded
	r.emit(EventLog, map[string]string{"stream": StreamStdout, "text": "b\n"}) // 4
	r.emit(EventProgress, map[string]int{"progress": 2})                       // 5
	r.Finish(StatusCompleted, json.RawMessage(`{}`))                           // 6
	evs, got := followPressed(t, r, func(int) bool { return true })
	assert.Equal(t, []string{"1:started", "4:log", "5:progress", "6:finished"}, got)
	assert.JSONEq(t, `{"stream":"stdout","text":"a\nb\n","from_seq":2}`, string(evs[1].Data))
}
