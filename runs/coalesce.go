package runs

import (
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"
)

// Coalescing bounds: a run that prints line by line produces at most one
// log event per flushInterval (or per maxLogEventJSON bytes of encoded
// text), and at most one progress event per flushInterval, whatever it
// writes. The bound is on the text as encoding/json writes it, so that a
// run_event fits the smallest message a connection may be configured for
// (transport.MinMessageSize) even when every byte needs a six-byte escape.
const (
	flushInterval   = 50 * time.Millisecond
	maxLogEventJSON = 12 << 10
)

// Streams of log events.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
	StreamLog    = "log" // runtime.log and the gateway's notes about the run
)

// pendingLog is one stream's text not yet emitted.
type pendingLog struct {
	stream string
	text   []byte
	cost   int // jsonTextCost of text
}

// coalescer holds a run's output between flushes; guarded by Run.mu.
// Each stream coalesces on its own; pending keeps the streams in the order
// their first pending byte arrived, which is the order they are emitted.
type coalescer struct {
	pending      []pendingLog
	progress     json.RawMessage // latest progress not yet emitted
	lastProgress time.Time
	timer        *time.Timer // armed while something is pending
	stopped      bool
}

func (c *coalescer) stop() {
	c.stopped = true
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
}

// Log takes bytes the run wrote to stream (StreamStdout, StreamStderr or
// StreamLog). The full logs keep every stream as one text, in the order
// the calls came.
func (r *Run) Log(stream string, p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rec.Status != StatusRunning || r.logs.stopped {
		return
	}
	if room := r.reg.cfg.MaxLogBytes - len(r.fullLogs); room > 0 {
		r.fullLogs = append(r.fullLogs, p[:min(room, len(p))]...)
	}
	pl := r.logs.stream(stream)
	pl.text = append(pl.text, p...)
	if pl.cost += jsonTextCost(p); pl.cost >= maxLogEventJSON {
		r.flushLocked()
		return
	}
	r.armLocked()
}

// stream is the pending text of stream, added at the end when new.
func (c *coalescer) stream(stream string) *pendingLog {
	for i := range c.pending {
		if c.pending[i].stream == stream {
			return &c.pending[i]
		}
	}
	c.pending = append(c.pending, pendingLog{stream: stream})
	return &c.pending[len(c.pending)-1]
}

// Progress takes a progress report: a JSON object {progress, total,
// message}.
func (r *Run) Progress(report json.RawMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rec.Status != StatusRunning || r.logs.stopped {
		return
	}
	r.rec.Progress = report
	r.logs.progress = report
	if time.Since(r.logs.lastProgress) >= flushInterval {
		r.flushLocked()
		return
	}
	r.armLocked()
}

func (r *Run) armLocked() {
	if r.logs.timer == nil {
		r.logs.timer = time.AfterFunc(flushInterval, r.tick)
	}
}

func (r *Run) tick() {
	r.mu.Lock()
	r.logs.timer = nil
	r.flushLocked()
	r.mu.Unlock()
}

// flushLocked emits what is pending: each stream's text in events of at
// most maxLogEventJSON encoded bytes, then the latest progress.
func (r *Run) flushLocked() {
	kept := r.logs.pending[:0]
	for _, pl := range r.logs.pending {
		if rest := r.flushStreamLocked(pl.stream, pl.text); len(rest) > 0 {
			kept = append(kept, pendingLog{pl.stream, rest, jsonTextCost(rest)})
		}
	}
	clear(r.logs.pending[len(kept):])
	r.logs.pending = kept
	if r.logs.progress != nil {
		r.appendLocked(EventProgress, r.logs.progress)
		r.logs.progress, r.logs.lastProgress = nil, time.Now()
	}
}

// flushStreamLocked emits the text of one stream and returns what must
// wait: a UTF-8 sequence cut by the pipe waits for its end unless the run
// is over.
func (r *Run) flushStreamLocked(stream string, pending []byte) []byte {
	cut := len(pending)
	if !r.logs.stopped {
		cut = completeUTF8(pending)
	}
	for text := pending[:cut]; len(text) > 0; {
		n := jsonPrefix(text, maxLogEventJSON)
		raw, _ := json.Marshal(map[string]string{"stream": stream, "text": strings.ToValidUTF8(string(text[:n]), "\uFFFD")})
		r.appendWeighedLocked(EventLog, raw, n)
		text = text[n:]
	}
	return append([]byte(nil), pending[cut:]...)
}

// jsonPrefix is the length of the longest prefix of b, whole characters
// only, whose text encoding/json writes in at most budget bytes (at least
// one character).
func jsonPrefix(b []byte, budget int) int {
	n, cost := 0, 0
	for n < len(b) {
		r, size := utf8.DecodeRune(b[n:])
		if cost += jsonRuneCost(r, size); cost > budget && n > 0 {
			break
		}
		n += size
	}
	return n
}

// jsonTextCost is how many bytes encoding/json writes for text inside a
// string (at most: a few control characters have shorter escapes).
func jsonTextCost(text []byte) int {
	cost := 0
	for len(text) > 0 {
		r, size := utf8.DecodeRune(text)
		cost += jsonRuneCost(r, size)
		text = text[size:]
	}
	return cost
}

// jsonRuneCost is the encoded size of one character of size bytes: HTML
// characters, U+2028, U+2029, most control characters and an invalid
// byte take a \uXXXX escape.
func jsonRuneCost(r rune, size int) int {
	switch {
	case r == '\n', r == '\r', r == '\t', r == '"', r == '\\':
		return 2
	case r < 0x20, r == '<', r == '>', r == '&', r == '\u2028', r == '\u2029', r == utf8.RuneError && size == 1:
		return 6
	}
	return size
}

// completeUTF8 is the length of b without a UTF-8 sequence cut at its end.
func completeUTF8(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}
