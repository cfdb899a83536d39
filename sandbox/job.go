package sandbox

import (
	"encoding/json"
	"io"
	"time"

	"github.com/skillgate/skillgate/internal/runerror"
)

// Run statuses.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
)

// reservedTypes are the error types only the gateway reports, including
// those of run cancellation. User code never produces one: an exception
// class of such a name is reported as UserTypePrefix + name.
var reservedTypes = map[string]bool{
	runerror.Timeout: true, runerror.MemoryLimit: true, runerror.OutputTooLarge: true, runerror.Sandbox: true,
	runerror.InvalidOutput: true, runerror.Canceled: true, runerror.Interrupted: true, runerror.Validation: true,
}

// UserTypePrefix marks a user exception class whose name is a reserved
// type, so that it can neither pass for the gateway's verdict nor lose its
// name: class SANDBOX_ERROR is reported as "user.SANDBOX_ERROR".
const UserTypePrefix = "user."

// IsReservedType reports whether t is an error type only the gateway
// reports.
func IsReservedType(t string) bool { return reservedTypes[t] }

// Job is one run: either run_code (Code set) or execute_skill (EntrySkill
// and EntryModule set). Every field is validated; a bad one fails the run
// with SANDBOX_ERROR.
type Job struct {
	// RunID identifies the run in logs and as runtime.run_id.
	RunID string
	// Code is the run_code source; empty for execute_skill.
	Code string
	// Language is what Code is written in: LanguagePython (also "") or
	// LanguageBash.
	Language string
	// EntrySkill names the mounted skill whose module is run (execute_skill).
	EntrySkill string
	// EntryModule is the module path in that skill, e.g. "code/main.py".
	EntryModule string
	// Entrypoint is the function called with Args: run_code's entrypoint
	// (default "main") or the skill's export.
	Entrypoint string
	// Args is a JSON object; empty means {}.
	Args json.RawMessage
	// Skills are mounted read-only and importable as skills.<Name>; for
	// execute_skill they include the executed skill.
	Skills []Skill
	// InputBlobs can be read with runtime.blobs.read_text.
	InputBlobs []InputBlob
	// OutputBlobIDs are handed out, in order, to the blobs the run writes.
	OutputBlobIDs []string
	// Outputs, when set, takes the blobs of a completed run one by one,
	// streamed from their files while the sandbox still holds them, and
	// Result.OutputBlobs lists them without their data. Nil reads every
	// blob into Result.OutputBlobs.
	Outputs OutputSink
	// Env is added to the sandbox environment (declared secrets).
	Env map[string]string
	// Egress, when set, gives the run network access through it (see
	// Egress); nil means no network.
	Egress Egress
	// CPUs bounds the run's CPU share (a skill's [runtime] cpus); 0
	// means Config.CPUs, which also caps it.
	CPUs float64
	// Timeout is the wall-clock limit from job delivery; 0 means the
	// default, and it is capped at Config.MaxTimeout.
	Timeout time.Duration
	// Observer, when set, receives the run's events while it lasts.
	Observer *Observer
	// Environment is the Python environment the run sees before the
	// host's packages; the zero value is the host's alone.
	Environment Environment
}

// Environment is a set of installed Python packages a run sees: built,
// read-only directories searched in order (first wins) before the host's
// packages, and modules a template imports ahead of its runs. Runs with
// the same Key share templates; Key is empty exactly when Paths and
// Preload are.
type Environment struct {
	// Key is the environment's content address (derived from what it
	// holds and what it preloads).
	Key string
	// Paths are host directories of installed packages (pip --target
	// layouts), each mounted read-only into the run.
	Paths []string
	// Preload are module names a template imports before it forks runs.
	Preload []string
}

// The languages of run_code.
const (
	// LanguagePython: Code is a module whose Entrypoint is called with Args.
	LanguagePython = "python"
	// LanguageBash: Code is a script /bin/bash runs; exit status 0 is a
	// completed run with output {"exit_code": 0}, any other a failed one.
	LanguageBash = "bash"
)

// Skill is a mounted skill, at /skills/<Name>/ in the run.
type Skill struct {
	// Name is dotted, e.g. "acme.math.add", or an Agent Skills name such
	// as "pdf" (files only: not importable).
	Name string
	// Files are the skill's files, skill.toml included.
	Files []File
	// Entrypoint ("code/main.py") and Export ("main") say what the skill's
	// package re-exports, from the manifest's [runtime] table (the
	// registry read it). When either is empty the package exports nothing
	// but its modules stay importable; a skill.toml among Files is only a
	// file.
	Entrypoint string
	Export     string
}

// File is one file of a skill.
type File struct {
	// Path is slash-separated and relative to the skill root.
	Path string
	Data []byte
}

// InputBlob is a blob the run may read.
type InputBlob struct {
	ID, Kind string
	Data     []byte
}

// OutputBlob is a blob the run wrote.
type OutputBlob struct {
	ID, Kind string
	// Size is the blob's length in bytes.
	Size int64
	// Data is the content, unless the job had an OutputSink.
	Data []byte
}

// OutputSink takes a completed run's blobs as the sandbox collects them.
// Their sizes are checked against the run's limits (each blob's and all
// of them together) before Output is first called.
type OutputSink interface {
	// Output is called once per blob, in order. b.Size is known before
	// any byte is read, and r yields exactly b.Size bytes; r must not be
	// used after Output returns. An error stops the collection and fails
	// the run: a *RunError with its own type, any other error as a
	// BlobError.
	Output(b OutputBlob, r io.Reader) error
}

// Result is the outcome of a run.
type Result struct {
	// Status is StatusCompleted or StatusFailed.
	Status string
	// Output is the entrypoint's return value (completed only), at most
	// MaxOutputBytes.
	Output json.RawMessage
	// Error says why the run failed (failed only).
	Error *RunError
	// Logs is the end of stdout, stderr and runtime.log, interleaved as read, at
	// most MaxLogsPreview bytes of valid UTF-8, starting with a marker when
	// the beginning was cut.
	Logs string
	// OutputBlobs are the blobs the run wrote (completed only).
	OutputBlobs []OutputBlob
	// Duration is the time from job delivery to the end of the run.
	Duration time.Duration
}

// RunError describes a failed run.
type RunError struct {
	// Type is the Python exception class name or one of the ErrType
	// constants.
	Type    string
	Message string
}

func (e *RunError) Error() string { return e.Type + ": " + e.Message }

func failed(kind, msg string) *Result {
	return &Result{Status: StatusFailed, Error: &RunError{Type: kind, Message: truncate(msg, maxErrorMessage)}}
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
