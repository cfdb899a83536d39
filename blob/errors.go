package blob

import "errors"

// Sentinel errors of the package. Operations wrap them with context
// (fmt.Errorf("op: %w", err)); test with errors.Is.
var (
	// ErrNotFound: no blob with that id (never written, expired or removed).
	ErrNotFound = errors.New("blob not found")
	// ErrExists: Put with an id that is already stored or being written.
	ErrExists = errors.New("blob already exists")
	// ErrTooLarge: the content passed the store's size limit; nothing was kept.
	ErrTooLarge = errors.New("blob too large")
	// ErrInvalidID: not of the form "blob:" followed by 32 lowercase hex digits.
	ErrInvalidID = errors.New("invalid blob id")
	// ErrInvalidKind: a blob kind that is not a MIME type (type/subtype).
	ErrInvalidKind = errors.New("invalid blob kind")
	// ErrFullReadTooLarge: ReadSample in SampleFull mode on a blob larger than
	// the byte budget; the caller should sample the head or the tail instead.
	ErrFullReadTooLarge = errors.New("blob larger than max_bytes: read it in pieces with range, or a part with sample_head or sample_tail")
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

// Errors of the Objects space and of uploads.
var (
	// ErrObjectNotFound: no object under that key.
	ErrObjectNotFound = errors.New("object not found")
	// ErrObjectExists: CreateObject found an object under the key.
	ErrObjectExists = errors.New("object already exists")
	// ErrObjectChanged: the object was replaced while it was being read
	// (S3 reads an object's later parts on the condition that it is the
	// one it began with); reading it again gets the new one whole.
	ErrObjectChanged = errors.New("object changed while it was read")
	// ErrInvalidKey: an object key outside the allowed form (see ValidateKey).
	ErrInvalidKey = errors.New("invalid object key")
	// ErrUploadNotFound: no pending upload with that id for this owner
	// (never begun, finished, expired, or another identity's).
	ErrUploadNotFound = errors.New("upload not found")
	// ErrInvalidUpload: a chunk or finish the upload cannot take (a hole
	// before the offset, an overlap with different bytes, bytes past the
	// declared size, a finish before all bytes arrived); see the message.
	ErrInvalidUpload = errors.New("invalid upload request")
	// ErrUploadFinishing: another finish of the same upload holds it;
	// that call makes the blob, and the upload is gone once it has.
	ErrUploadFinishing = errors.New("upload is being finished by another call")
	// ErrChecksumMismatch: finish_upload's sha256 differs from the content;
	// nothing was kept.
	ErrChecksumMismatch = errors.New("sha256 does not match the uploaded content")
)
