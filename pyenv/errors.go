package pyenv

import "errors"

// Sentinel errors of the package; operations wrap them with context.
var (
	// ErrInvalidRequirement: a requirement or requirements file this
	// package does not accept (malformed, or an option, URL or path).
	ErrInvalidRequirement = errors.New("invalid requirement")
	// ErrNoSources: requirements were declared but the builder has no
	// package source (neither find-links nor an index URL).
	ErrNoSources = errors.New("no package source")
	// ErrBuildFailed: pip could not install the requirements; the
	// *BuildError says why in pip's words.
	ErrBuildFailed = errors.New("environment build failed")
	// ErrBuilding: the environment is being built; ask again later.
	ErrBuilding = errors.New("environment building")
	// ErrClosed: a build asked of a closed Builder.
	ErrClosed = errors.New("builder closed")
)

// BuildError is a failed build: what pip said, cut to its reason.
type BuildError struct {
	// Key is the environment that could not be built.
	Key string
	// Reason is pip's explanation (its ERROR lines), or why pip could not
	// run or finish (timeout, memory limit).
	Reason string
	// Output is the end of pip's output, for the log.
	Output string
}

func (e *BuildError) Error() string { return "environment build failed: " + e.Reason }

// Is makes errors.Is(err, ErrBuildFailed) true.
func (e *BuildError) Is(target error) bool { return target == ErrBuildFailed }
