package runs

import (
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"
)

// Coalescing bounds: a run that prints line by line produces at most one
// log event per flushInterval (or per maxLogEvent bytes), and at most one
// progress event per flushInterval, whatever it writes.
const (
	flushInterval = 50 * time.Millisecond
	maxLogEvent   = 16 << 10
)

// LogStream names the stream of log events. The sandbox gives the code one
// pipe for stdout and stderr (runtime.log writes to stderr), so their lines
// arrive interleaved as written, under one name.
const LogStream = "log"

// coalescer holds a run's output between flushes; guarded by Run.mu.
type coalescer struct {
	pending      []byte          // log bytes not yet emitted
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

// Log takes bytes the run wrote to stdout or stderr.
func (r *Run) Log(p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rec.Status != StatusRunning || r.logs.stopped {
		return
	}
	if room := r.reg.cfg.MaxLogBytes - len(r.fullLogs); room > 0 {
		r.fullLogs = append(r.fullLogs, p[:min(room, len(p))]...)
	}
	r.logs.pending = append(r.logs.pending, p...)
	if len(r.logs.pending) >= maxLogEvent {
		r.flushLocked()
		return
	}
	r.armLocked()
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

// flushLocked emits what is pending: log text in events of at most
// maxLogEvent bytes, then the latest progress. A UTF-8 sequence cut by
// the pipe waits for its end unless the run is over.
func (r *Run) flushLocked() {
	pending := r.logs.pending
	cut := len(pending)
	if !r.logs.stopped {
		cut = completeUTF8(pending)
	}
	for text := pending[:cut]; len(text) > 0; {
		n := len(text)
		if n > maxLogEvent {
			if n = completeUTF8(text[:maxLogEvent]); n == 0 {
				n = maxLogEvent
			}
		}
		raw, _ := json.Marshal(map[string]string{"stream": LogStream, "text": strings.ToValidUTF8(string(text[:n]), "\uFFFD")})
		r.appendLocked(EventLog, raw)
		text = text[n:]
	}
	r.logs.pending = append(r.logs.pending[:0], pending[cut:]...)
	if r.logs.progress != nil {
		r.appendLocked(EventProgress, r.logs.progress)
		r.logs.progress, r.logs.lastProgress = nil, time.Now()
	}
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
