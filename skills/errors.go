package skills

import "errors"

// Sentinel errors of the package. Operations wrap them with context
// (fmt.Errorf("op: %w", err)); test with errors.Is.
var (
	// ErrSkillNotFound: no skill with that name, or no such version of it.
	// Resolve returns a *NotFoundError that matches it.
	ErrSkillNotFound = errors.New("skill not found")
	// ErrInvalidCursor: a list cursor that this package did not produce, or
	// one produced for a different namespace.
	ErrInvalidCursor = errors.New("invalid cursor")
	// ErrPathRefused: a file path that is absolute, climbs out with "..",
	// contains a backslash or NUL, or names a symlink that was not followed.
	ErrPathRefused = errors.New("path refused")
	// ErrFileNotFound: a well-formed path that names no file of the snapshot.
	ErrFileNotFound = errors.New("file not found")
	// ErrInvalidVersion: a string that is not a semantic version 2.0.0.
	ErrInvalidVersion = errors.New("invalid semantic version")
	// ErrEnvironmentBuilding: the skill is valid but not offered yet, its
	// Python environment is being built. Resolve returns a *BuildingError
	// that matches it; asking again later succeeds.
	ErrEnvironmentBuilding = errors.New("skill environment building")
	// ErrRegistryClosed: Reload after Close.
	ErrRegistryClosed = errors.New("registry closed")
)
