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
	// ErrRegistryClosed: Reload after Close.
	ErrRegistryClosed = errors.New("registry closed")

	// ErrBlobNotFound: no blob with that id (never written, expired or removed).
	ErrBlobNotFound = errors.New("blob not found")
	// ErrBlobExists: Put with an id that is already stored or being written.
	ErrBlobExists = errors.New("blob already exists")
	// ErrBlobTooLarge: the content passed the store's size limit; nothing was kept.
	ErrBlobTooLarge = errors.New("blob too large")
	// ErrInvalidBlobID: not of the form "blob:" followed by 32 lowercase hex digits.
	ErrInvalidBlobID = errors.New("invalid blob id")
	// ErrInvalidKind: a blob kind that is not a MIME type (type/subtype).
	ErrInvalidKind = errors.New("invalid blob kind")
	// ErrFullReadTooLarge: ReadSample in SampleFull mode on a blob larger than
	// the byte budget; the caller should sample the head or the tail instead.
	ErrFullReadTooLarge = errors.New("blob larger than max_bytes: read it with sample_head or sample_tail")
	// ErrInvalidSample: an unknown sample mode or a non-positive byte budget.
	ErrInvalidSample = errors.New("invalid sample request")
	// ErrStoreClosed: an operation on a closed blob store.
	ErrStoreClosed = errors.New("blob store closed")
	// ErrStoreLocked: another process holds the blob store's data directory.
	ErrStoreLocked = errors.New("blob store directory in use by another process")
	// ErrStorageFull: the store cannot take a blob now (the disk or the
	// process's file descriptors ran out, or the store's or the owner's
	// quota would be exceeded); nothing was kept and earlier blobs are
	// intact. Returned as a *StorageFullError; retrying later can succeed
	// once blobs expire or are freed.
	ErrStorageFull = errors.New("blob storage full")
)
