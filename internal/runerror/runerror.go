// Package runerror is the vocabulary of a failed run: the error.type
// values the gateway itself reports in a run result (as opposed to a
// user's exception class), and the retry hint of the failures a retry can
// cure. The sandbox (which decides most of them and must keep user code
// from forging any), the run registry (which finishes the runs a restart
// lost) and the dispatcher (which decides the rest) all report them; they
// are leaves of one another, so the words live here, importing nothing,
// as the Python naming facts live in internal/pyname.
//
// These are run error types, not error codes: a failed run is a result,
// not a JSON-RPC error. Two share their spelling with an application
// error code of dispatch (CANCELLED, STORAGE_FULL) because a run meets
// the same condition as a call; each vocabulary keeps its own constant.
package runerror

// Error types the gateway decides. A new one is added here, to
// sandbox's reserved types if user code could otherwise forge it, and
// to docs/protocol.md.
const (
	// Timeout: the run passed its wall-clock timeout or its CPU time
	// limit and was killed.
	Timeout = "EXECUTION_TIMEOUT"
	// MemoryLimit: the run passed its memory limit.
	MemoryLimit = "MEMORY_LIMIT_EXCEEDED"
	// OutputTooLarge: the run's output or its logs passed their cap.
	OutputTooLarge = "OUTPUT_TOO_LARGE"
	// Sandbox: the sandbox failed to set up or carry out the run; not the
	// code's doing.
	Sandbox = "SANDBOX_ERROR"
	// InvalidOutput: the run returned something the gateway cannot report
	// as its output (decided above the sandbox, which returns any JSON).
	InvalidOutput = "INVALID_OUTPUT"
	// Validation: the args failed the skill's args_schema; no code ran.
	// The skill check's output uses it for an invalid package too.
	Validation = "VALIDATION_ERROR"
	// Canceled: cancel_run or the caller's disconnect stopped the run.
	Canceled = "CANCELLED"
	// Interrupted: the gateway stopped while the run was in progress (a
	// run stopped by cancel_run is Canceled).
	Interrupted = "INTERRUPTED"
	// StorageFull: the blob store had no room for what the run needed
	// stored.
	StorageFull = "STORAGE_FULL"
	// BlobError: an output blob of the run could not be collected or
	// stored (a bad kind, too large); spelled as an exception class
	// because it is the run's own doing.
	BlobError = "BlobError"
)

// The retry hint of a failed run that may succeed if run again (a timeout,
// a sandbox failure, an interrupted run): data.retry of its run result.
const (
	RetryDelayMS  = 1000
	RetryAttempts = 2
)
