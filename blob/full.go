package blob

import (
	"errors"
	"fmt"
	"syscall"
)

// Why a store is full, as StorageFullError.Reason says it.
const (
	FullDisk       = "disk"        // the data folder's filesystem is out of space or inodes
	FullFiles      = "files"       // the process is out of file descriptors
	FullStoreQuota = "store_quota" // the store's own byte quota
	FullOwnerQuota = "owner_quota" // the owner's byte quota
	// FullPendingUploads: the owner has as many unfinished uploads as it
	// may have at once.
	FullPendingUploads = "pending_uploads"
)

// StorageFullError says why a Put could not keep its blob. Its text is
// safe to send to the client: it names the limit, never a file path.
type StorageFullError struct {
	Reason string // one of the Full* constants
	// Limit, Used and Need are byte counts of a quota (zero for the disk
	// and file descriptors, whose state the store does not track), or
	// counts of uploads for FullPendingUploads.
	Limit, Used, Need int64
	// Pending is the part of Used that unfinished uploads hold.
	Pending int64
	chunk   bool  // an upload's chunk asked, not a blob
	cause   error // the system error, for the gateway's own log
}

func (e *StorageFullError) Error() string {
	what := "this blob"
	if e.chunk {
		what = "this chunk"
	}
	switch e.Reason {
	case FullStoreQuota:
		return fmt.Sprintf("the gateway's blob store holds %d of its %d bytes%s; %s needs %d more",
			e.Used, e.Limit, e.pendingNote(), what, e.Need)
	case FullOwnerQuota:
		if e.Pending > 0 {
			return fmt.Sprintf("this identity's blobs and unfinished uploads hold %d of its %d bytes%s; %s needs %d more",
				e.Used, e.Limit, e.pendingNote(), what, e.Need)
		}
		return fmt.Sprintf("this identity's blobs hold %d of its %d bytes; %s needs %d more", e.Used, e.Limit, what, e.Need)
	case FullPendingUploads:
		return fmt.Sprintf("this identity has %d unfinished uploads, the most it may have at once; "+
			"finish one, or wait until one expires an hour after its last chunk", e.Used)
	case FullFiles:
		return "the gateway is out of file descriptors"
	}
	return "the gateway's blob storage is out of disk space"
}

func (e *StorageFullError) pendingNote() string {
	if e.Pending == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d of them in unfinished uploads)", e.Pending)
}

// Is makes errors.Is(err, ErrStorageFull) true.
func (e *StorageFullError) Is(target error) bool { return target == ErrStorageFull }

// Unwrap returns the system error behind a disk or descriptor shortage.
func (e *StorageFullError) Unwrap() error { return e.cause }

// asStorageFull turns the errors of a full filesystem or an exhausted
// descriptor table into a *StorageFullError and leaves others alone: only
// these are the client's to retry, everything else is the gateway's fault.
func asStorageFull(err error) error {
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return &StorageFullError{Reason: FullDisk, cause: err}
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return &StorageFullError{Reason: FullFiles, cause: err}
	}
	return err
}
