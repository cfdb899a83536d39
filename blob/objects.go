package blob

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// maxKeyLen bounds an object key; S3 allows 1024 bytes and the store's
// prefix needs some of them.
const maxKeyLen = 512

// ObjectInfo describes one object of an Objects space.
type ObjectInfo struct {
	Key      string
	Size     int64
	Modified time.Time
}

// Objects is a flat key/object space kept next to the blobs in the same
// backend (the data folder, the bucket), so that every replica sharing the
// blobs shares it too. Pending uploads live here, and so can other records
// a gateway must find on any replica (run records, retained events).
//
// Keys are slash-separated segments of [A-Za-z0-9_-][A-Za-z0-9._-]*
// (no empty, "." or ".." segment, at most 512 bytes; see ValidateKey).
// Objects are replaced whole: PutObject is all or nothing and a reader
// never sees a mix of two versions. There is no locking across replicas:
// a record that several replicas may write at once should be written
// under keys of its own (one per writer or per event) rather than updated
// in place, or created with CreateObject, of which exactly one of several
// concurrent writers of a key wins, on any replica. Implementations are
// safe for concurrent use.
type Objects interface {
	// PutObject stores the content of r under key, replacing any object
	// there. On error nothing of the new content is visible.
	PutObject(ctx context.Context, key string, r io.Reader) error
	// CreateObject stores data under key only if no object is there, in
	// one atomic step (ErrObjectExists otherwise): the way to claim a key
	// across replicas. data is small (a record or a chunk).
	CreateObject(ctx context.Context, key string, data []byte) error
	// GetObject opens key for reading (ErrObjectNotFound when absent);
	// the caller closes the reader.
	GetObject(ctx context.Context, key string) (io.ReadCloser, ObjectInfo, error)
	// ListObjects returns the objects whose key starts with prefix,
	// sorted by key. The prefix need not end at a segment boundary.
	ListObjects(ctx context.Context, prefix string) ([]ObjectInfo, error)
	// DeleteObject removes key. A missing key is no error, so that many
	// replicas may clean up the same objects at once.
	DeleteObject(ctx context.Context, key string) error
}

// ValidateKey checks an object key (see Objects).
func ValidateKey(key string) error {
	if key == "" || len(key) > maxKeyLen {
		return fmt.Errorf("key %q: want 1-%d bytes: %w", clipActual(key), maxKeyLen, ErrInvalidKey)
	}
	for _, seg := range strings.Split(key, "/") {
		if !validSegment(seg) {
			return fmt.Errorf("key %q: segment %q: %w", clipActual(key), clipActual(seg), ErrInvalidKey)
		}
	}
	return nil
}

// validSegment: a segment never starts with "." so that it cannot be "."
// or ".." nor collide with a store's hidden temp files.
func validSegment(s string) bool {
	if s == "" || s[0] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '_' && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

// validatePrefix checks a ListObjects prefix: empty, or a key, or a key
// followed by "/".
func validatePrefix(prefix string) error {
	p := strings.TrimSuffix(prefix, "/")
	if p == "" && prefix == "" {
		return nil
	}
	return ValidateKey(p)
}
