package sandbox

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
)

// logBuffer keeps the end of a run's logs (stdout, stderr and runtime.log
// as one text, in the order the chunks were read) and counts the rest.
// Past hardCap it closes overflow once (the run is then killed). Safe for
// concurrent use.
type logBuffer struct {
	keep     int
	hardCap  int64
	overflow chan struct{}

	mu    sync.Mutex
	buf   []byte               // guarded by mu; the last bytes, at most 2*keep
	total int64                // guarded by mu
	sink  func(Stream, []byte) // guarded by mu; sees every byte up to hardCap
}

// observe sends what is written from now on, up to the hard cap, to sink
// as well.
func (b *logBuffer) observe(sink func(Stream, []byte)) {
	b.mu.Lock()
	b.sink = sink
	b.mu.Unlock()
}

func newLogBuffer(keep int, hardCap int64) *logBuffer {
	return &logBuffer{keep: keep, hardCap: hardCap, overflow: make(chan struct{})}
}

// streamWriter writes one stream into a logBuffer.
type streamWriter struct {
	b *logBuffer
	s Stream
}

func (w streamWriter) Write(p []byte) (int, error) { return w.b.write(w.s, p) }

// stream is the io.Writer of one stream.
func (b *logBuffer) stream(s Stream) io.Writer { return streamWriter{b, s} }

// write never fails: what does not fit is counted and dropped.
func (b *logBuffer) write(s Stream, p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	before := b.total
	b.total += int64(len(p))
	if before <= b.hardCap && b.total > b.hardCap {
		close(b.overflow)
	}
	if b.sink != nil && before < b.hardCap {
		// Under mu, so the sink sees the chunks of every stream in the
		// order the preview keeps them.
		b.sink(s, p[:min(int64(len(p)), b.hardCap-before)])
	}
	if len(p) >= b.keep {
		b.buf = append(b.buf[:0], p[len(p)-b.keep:]...)
		return len(p), nil
	}
	if len(b.buf)+len(p) > 2*b.keep {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-(b.keep-len(p)):]...)
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// Total is the number of bytes written so far.
func (b *logBuffer) Total() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// Preview is the end of the logs, valid UTF-8, at most keep bytes; when
// the beginning was cut it starts with a marker saying how much.
func (b *logBuffer) Preview() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.total == int64(len(b.buf)) {
		if s := strings.ToValidUTF8(string(b.buf), "\uFFFD"); len(s) <= b.keep {
			return s
		}
	}
	// The marker for the whole total is at least as long as the real one.
	room := b.keep - len(cutMarker(b.total))
	raw := b.buf[len(b.buf)-min(room, len(b.buf)):]
	// Invalid bytes become U+FFFD (3 bytes each), so the cleaned end may
	// outgrow the room: keep the longest end of raw whose cleaned form
	// fits. Cutting at a later character start never lengthens it, so the
	// cut is found by bisection. The count in the marker is of raw bytes,
	// as written by the run.
	cut := runeStartFrom(raw, sort.Search(len(raw), func(i int) bool {
		return len(strings.ToValidUTF8(string(raw[runeStartFrom(raw, i):]), "\uFFFD")) <= room
	}))
	return cutMarker(b.total-int64(len(raw)-cut)) + strings.ToValidUTF8(string(raw[cut:]), "\uFFFD")
}

// runeStartFrom is the first character start in b at or after i.
func runeStartFrom(b []byte, i int) int {
	for i < len(b) && !utf8.RuneStart(b[i]) {
		i++
	}
	return i
}

func cutMarker(n int64) string { return fmt.Sprintf("[... %d bytes cut ...]\n", n) }
