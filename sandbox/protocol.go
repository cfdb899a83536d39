package sandbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/skillgate/skillgate/internal/runerror"
	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// readyByte is what Python writes on its result pipe once it waits for a job.
const readyByte = 'R'

// preparedByte is what the runtime writes on its result pipe once the job
// is set up, just before it runs the job's code. A result frame that comes
// before it was written by the runtime alone; one after it may have been
// written by the code, which shares the runtime's process and descriptors.
// A frame starts with its big-endian length, whose first byte is 0 for any
// frame the host accepts, so the two never mix up.
const preparedByte = 'P'

// Frame bounds.
const (
	maxResultFrame = 64 << 10
	maxStatusLine  = 16 << 10
	maxStatusRaw   = 4 << 10
)

// resultFrame is the runtime's answer (see runtime/_boot.py).
type resultFrame struct {
	OK      bool         `json:"ok"`
	Output  string       `json:"output"`
	Type    string       `json:"type"`
	Message string       `json:"message"`
	Blobs   []blobRecord `json:"blobs"`
	// Runtime marks a failure the runtime itself determined (a limit, a
	// failed set-up) rather than an exception of the code.
	Runtime bool `json:"runtime"`

	prepared bool // the frame came after preparedByte
}

// errorType is the RunError type of a failed frame. The runtime's own
// verdicts are believed only where the code could not have forged them to
// its advantage: a failed set-up only before the code ran, the output and
// memory limits (which fail the code's own run) at any time. Every other
// reserved name is an exception class of the code and is marked as such.
func (f *resultFrame) errorType() string {
	t := errorType(f.Type)
	if f.Runtime {
		switch {
		case t == runerror.Sandbox && !f.prepared, t == runerror.OutputTooLarge, t == runerror.MemoryLimit:
			return t
		}
	}
	if IsReservedType(t) {
		return UserTypePrefix + t
	}
	return t
}

// errorType keeps a reported exception class name printable and short.
func errorType(t string) string {
	if t == "" || len(t) > 128 || !printableASCII(t) {
		return "Exception"
	}
	return t
}

// liveSink takes what the code reports on the result pipe while it runs.
type liveSink struct {
	progress func(Progress)
	log      func([]byte)
}

// readResultFrame reads the optional preparedByte, the progress reports
// and runtime.log lines that follow it (handed to sink) and the result
// frame.
func readResultFrame(r io.Reader, f *resultFrame, sink liveSink) error {
	var first [1]byte
	for {
		if _, err := io.ReadFull(r, first[:]); err != nil {
			return fmt.Errorf("read result: %w", err)
		}
		switch {
		case first[0] == preparedByte && !f.prepared:
			f.prepared = true
			continue
		case first[0] == progressByte && f.prepared:
			var p Progress
			if err := wire.ReadFrame(r, maxProgressFrame, &p); err != nil {
				return fmt.Errorf("read progress: %w", err)
			}
			sink.progress(p)
			continue
		case first[0] == logByte && f.prepared:
			line, err := wire.ReadRawFrame(r, maxLogFrame)
			if err != nil {
				return fmt.Errorf("read log line: %w", err)
			}
			sink.log(line)
			continue
		}
		return wire.ReadFrame(io.MultiReader(bytes.NewReader(first[:]), r), maxResultFrame, f)
	}
}

type blobRecord struct {
	Index int    `json:"index"`
	Kind  string `json:"kind"`
}

// check validates a result frame against the job: the output is JSON of at
// most MaxOutputBytes, blobs are within the job's ids.
func (f *resultFrame) check(outputs int) error {
	if !f.OK {
		if f.Type == "" {
			return errors.New("failure without a type")
		}
		return nil
	}
	if len(f.Output) > MaxOutputBytes {
		return fmt.Errorf("output of %d bytes", len(f.Output))
	}
	if !json.Valid([]byte(f.Output)) {
		return errors.New("output is not valid JSON")
	}
	if len(f.Blobs) > outputs {
		return fmt.Errorf("%d blobs written, %d ids available", len(f.Blobs), outputs)
	}
	for i, b := range f.Blobs {
		if b.Index != i {
			return fmt.Errorf("blob %d has index %d", i, b.Index)
		}
		if err := checkKind(b.Kind, false); err != nil {
			return fmt.Errorf("blob %d: %w", i, err)
		}
	}
	return nil
}

// statusLog collects pid 1's events; lines that are not events (a crash
// report) are kept as raw text.
type statusLog struct {
	events chan wire.Status
	raw    strings.Builder
}

// read consumes r until EOF; it closes events at the end.
func (s *statusLog) read(r io.Reader) {
	defer close(s.events)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxStatusLine)
	for sc.Scan() {
		var ev wire.Status
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Ev != "" {
			s.events <- ev
			continue
		}
		if s.raw.Len() < maxStatusRaw {
			s.raw.WriteString(truncate(sc.Text(), maxStatusRaw-s.raw.Len()))
			s.raw.WriteByte('\n')
		}
	}
}
