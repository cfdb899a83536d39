package sandbox

import "errors"

// Errors returned by Runner.Run besides the context's error. Everything
// that goes wrong inside a run is reported as a failed Result instead.
var (
	// ErrOverloaded means every worker is busy and the queue is full; the
	// caller should retry later.
	ErrOverloaded = errors.New("sandbox: overloaded")
	// ErrClosed means the Runner was closed before or during the run.
	ErrClosed = errors.New("sandbox: runner closed")
)

// Errors of the set-up and self-check.
var (
	// ErrUnsupported means the machine cannot isolate runs; the wrapping
	// error says what exactly is missing.
	ErrUnsupported = errors.New("sandbox: isolation unavailable")
	// errInvalidConfig wraps every Config.Validate failure.
	errInvalidConfig = errors.New("sandbox: invalid config")
	// errInvalidJob wraps every Job validation failure.
	errInvalidJob = errors.New("invalid job")
	// errUnsafeWorkDir wraps a work directory another user could change.
	errUnsafeWorkDir = errors.New("unsafe sandbox work dir")
)
