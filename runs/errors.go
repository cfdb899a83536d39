package runs

import "errors"

// Sentinel errors of the package.
var (
	// ErrNotFound: no run of that id belongs to the caller (unknown, expired,
	// or another identity's, which is indistinguishable on purpose).
	ErrNotFound = errors.New("run not found")
	// ErrCanceled is the cause given to a run's context by Cancel.
	ErrCanceled = errors.New("run canceled by cancel_run")
	// ErrBadCursor: a list cursor that this registry did not hand out.
	ErrBadCursor = errors.New("invalid cursor")
)
