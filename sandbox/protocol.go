package sandbox

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The re-exec'd helper's verb: os.Args[1] of the sandbox's pid 1.
const initVerb = "__skillgate_sandbox_init__"

// File descriptors of the sandbox's pid 1 (after stdin, stdout, stderr;
// stderr is the status pipe too, so a crash report reaches the host).
const (
	fdCtl    = 3 // host -> init: one length-prefixed initConfig, then EOF = die
	fdStatus = 4 // init -> host: JSON lines (statusEvent)
	fdStdout = 5 // stdout of Python
	fdJob    = 6 // host -> Python: the job (jobMessage), then EOF
	fdResult = 7 // Python -> host: readyByte, preparedByte, then one resultFrame
	fdStderr = 8 // stderr of Python
	fdEgress = 9 // init -> host (runs with network): the proxy listener's fd
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
	maxCtlFrame    = 1 << 20
	maxResultFrame = 64 << 10
	maxStatusLine  = 16 << 10
	maxStatusRaw   = 4 << 10
)

// initConfig is what the host tells the sandbox's pid 1.
type initConfig struct {
	RootDir string `json:"root_dir"` // host dir the new root is mounted on (a template's sandboxes use one of its own)
	JobDir  string `json:"job_dir"`  // host dir bound read-only at /job
	LibDir  string `json:"lib_dir"`  // host dir bound read-only at /opt/skillgate
	EtcDir  string `json:"etc_dir"`  // host dir bound read-only at /etc (systemview.go)
	// EnvDirs are the run's Python environments, mounted read-only under
	// envMount (by name): the detached mounts EnvFDs, or bound by path
	// when there are none (see Environment.detach).
	EnvDirs        []string `json:"env_dirs,omitempty"`
	EnvFDs         []int    `json:"env_fds,omitempty"`
	Python         string   `json:"python"`
	TmpBytes       int64    `json:"tmp_bytes"`
	WorkspaceBytes int64    `json:"workspace_bytes"`
	OpenFiles      int      `json:"open_files"`
	FileSizeBytes  int64    `json:"file_size_bytes"`
	CPUSeconds     int64    `json:"cpu_seconds"` // hard RLIMIT_CPU until the job lowers it
	// Without a cgroup: RLIMIT_AS/RLIMIT_DATA and RLIMIT_NPROC of Python.
	RlimitMemory int64 `json:"rlimit_memory,omitempty"`
	RlimitProcs  int   `json:"rlimit_procs,omitempty"`
	// Network brings loopback up and hands the host a listener on
	// 127.0.0.1:EgressPort over fdEgress.
	Network bool `json:"network,omitempty"`
}

// Status events of pid 1.
const (
	evError   = "error"   // set-up failed; pid 1 exits
	evSpawned = "spawned" // Python started (Landlock says which ABI was enforced)
	evExit    = "exit"    // Python exited
)

type statusEvent struct {
	Ev       string `json:"ev"`
	Msg      string `json:"msg,omitempty"`
	Code     int    `json:"code,omitempty"`
	Signal   int    `json:"signal,omitempty"`
	CPUMilli int64  `json:"cpu_ms,omitempty"`
	Landlock int    `json:"landlock,omitempty"`
	Pid      int    `json:"pid,omitempty"` // a template's pid 1, as a host pid
	// Stamps are the spawned event's phase stamps, from phaseEntered on
	// (CLOCK_MONOTONIC ns).
	Stamps []int64 `json:"t,omitempty"`
}

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
		case t == ErrTypeSandbox && !f.prepared, t == ErrTypeOutputTooLarge, t == ErrTypeMemory:
			return t
		}
	}
	if IsReservedType(t) {
		return UserTypePrefix + t
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
			if err := readFrame(r, maxProgressFrame, &p); err != nil {
				return fmt.Errorf("read progress: %w", err)
			}
			sink.progress(p)
			continue
		case first[0] == logByte && f.prepared:
			line, err := readRawFrame(r, maxLogFrame)
			if err != nil {
				return fmt.Errorf("read log line: %w", err)
			}
			sink.log(line)
			continue
		}
		return readFrame(io.MultiReader(bytes.NewReader(first[:]), r), maxResultFrame, f)
	}
}

type blobRecord struct {
	Index int    `json:"index"`
	Kind  string `json:"kind"`
}

// writeFrame writes a big-endian uint32 length and the JSON of v.
func writeFrame(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode frame: %w", err)
	}
	buf := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(data)), uint32(len(data)))
	_, err = w.Write(append(buf, data...))
	return err
}

// readFrame reads one frame of at most limit bytes into v.
func readFrame(r io.Reader, limit int, v any) error {
	data, err := readRawFrame(r, limit)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode frame: %w", err)
	}
	return nil
}

// readRawFrame reads one frame of at most limit bytes.
func readRawFrame(r io.Reader, limit int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("read frame header: %w", err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if int64(n) > int64(limit) {
		return nil, fmt.Errorf("frame of %d bytes exceeds %d", n, limit)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, fmt.Errorf("read frame body: %w", err)
	}
	return data, nil
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
	events chan statusEvent
	raw    strings.Builder
}

// read consumes r until EOF; it closes events at the end.
func (s *statusLog) read(r io.Reader) {
	defer close(s.events)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxStatusLine)
	for sc.Scan() {
		var ev statusEvent
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
