package sandbox

import "time"

// Observer receives a run's events while it lasts, for callers that stream
// them (live runs). Every function may be nil. They are called from the
// Runner's goroutines, so they must return quickly: a slow observer would
// hold up the pipe the code writes to.
type Observer struct {
	// Admitted is called once the run holds a sandbox slot or a place in
	// the queue: from then on it is not refused as overloaded.
	Admitted func()
	// Started is called when the run has a sandbox, with how long it
	// waited in the queue.
	Started func(queued time.Duration)
	// Log receives what the code writes to stdout, stderr and runtime.log
	// as it arrives, up to the logs' hard cap (which counts all three):
	// one call per chunk read, in the order the gateway read them. p is
	// valid only during the call.
	Log func(s Stream, p []byte)
	// Progress receives what the code reports with runtime.progress.
	Progress func(Progress)
}

// Stream says where a run's log text came from.
type Stream uint8

const (
	StreamStdout Stream = iota // the code's stdout (fd 1)
	StreamStderr               // the code's stderr (fd 2): tracebacks, warnings
	StreamLog                  // runtime.log, and the gateway's notes about the run
)

// String is the stream's name on the wire.
func (s Stream) String() string {
	switch s {
	case StreamStdout:
		return "stdout"
	case StreamStderr:
		return "stderr"
	}
	return "log"
}

// Progress is one runtime.progress report.
type Progress struct {
	Done    float64  `json:"progress"`
	Total   *float64 `json:"total"`
	Message *string  `json:"message"`
}

// maxProgressFrame bounds one progress report on the result pipe.
const maxProgressFrame = 4 << 10

// maxLogFrame bounds one runtime.log frame on the result pipe; the
// runtime splits longer messages.
const maxLogFrame = 16 << 10

// logByte starts a runtime.log line on the result pipe: the byte, then a
// length-prefixed UTF-8 text. Lines travel on the result pipe rather than
// stderr so that they keep their own stream, whatever the code does with
// sys.stderr; like progress they are only the code's report about itself.
const logByte = 'L'

// progressByte starts a progress report on the result pipe: the byte, then
// a length-prefixed JSON Progress. Like a result frame written after
// preparedByte, it comes from the code's own process, which is why it is
// only ever taken as the code's report about itself.
const progressByte = 'G'

func (o *Observer) admitted() {
	if o != nil && o.Admitted != nil {
		o.Admitted()
	}
}

func (o *Observer) started(queued time.Duration) {
	if o != nil && o.Started != nil {
		o.Started(queued)
	}
}

func (o *Observer) logSink() func(Stream, []byte) {
	if o == nil {
		return nil
	}
	return o.Log
}

func (o *Observer) progress(p Progress) {
	if o != nil && o.Progress != nil {
		o.Progress(p)
	}
}
