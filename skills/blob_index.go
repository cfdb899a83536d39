package skills

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// blobEntry is one committed blob of a store's index.
type blobEntry struct {
	info   BlobInfo
	leases int    // open Blobs; guarded by blobIndex.mu
	data   []byte // MemStore only
}

// blobIndex is the bookkeeping both stores share: committed entries, ids
// being written, open leases and usage. TTL cleanup takes entries out of
// the index (under mu) before their data goes, so a blob is either
// leased or removable, never both.
type blobIndex struct {
	mu      sync.Mutex
	entries map[string]*blobEntry // guarded by mu
	pending map[string]bool       // guarded by mu: ids whose Put is running
	bytes   int64                 // guarded by mu
	closed  bool                  // guarded by mu
}

func newBlobIndex() blobIndex {
	return blobIndex{entries: map[string]*blobEntry{}, pending: map[string]bool{}}
}

// reserve claims id for a Put.
func (x *blobIndex) reserve(id string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	switch {
	case x.closed:
		return ErrStoreClosed
	case x.entries[id] != nil || x.pending[id]:
		return ErrBlobExists
	}
	x.pending[id] = true
	return nil
}

func (x *blobIndex) unreserve(id string) {
	x.mu.Lock()
	delete(x.pending, id)
	x.mu.Unlock()
}

func (x *blobIndex) commit(e *blobEntry) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.pending, e.info.ID)
	x.entries[e.info.ID] = e
	x.bytes += e.info.Size
}

func (x *blobIndex) stat(id string) (BlobInfo, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.entries[id]
	if e == nil {
		return BlobInfo{}, ErrBlobNotFound
	}
	return e.info, nil
}

// acquire takes a lease on id; release gives it back.
func (x *blobIndex) acquire(id string) (*blobEntry, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.entries[id]
	if e == nil {
		return nil, ErrBlobNotFound
	}
	e.leases++
	return e, nil
}

func (x *blobIndex) release(e *blobEntry) {
	x.mu.Lock()
	e.leases--
	x.mu.Unlock()
}

// drop forgets an entry whose data turned out to be gone.
func (x *blobIndex) drop(e *blobEntry) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.entries[e.info.ID] == e {
		delete(x.entries, e.info.ID)
		x.bytes -= e.info.Size
	}
}

// takeExpired removes from the index, and returns, the entries created at
// least ttl before now that hold no lease.
func (x *blobIndex) takeExpired(now time.Time, ttl time.Duration) []*blobEntry {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []*blobEntry
	for id, e := range x.entries {
		if e.leases == 0 && !now.Before(e.info.Created.Add(ttl)) {
			delete(x.entries, id)
			x.bytes -= e.info.Size
			out = append(out, e)
		}
	}
	return out
}

func (x *blobIndex) usage() (int, int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.entries), x.bytes
}

// close refuses further Puts; it reports whether it was already closed.
func (x *blobIndex) close() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	was := x.closed
	x.closed = true
	return was
}

// checkPut validates a Put's id and kind and returns the normalized kind.
func checkPut(id, kind string) (string, error) {
	if err := ValidateBlobID(id); err != nil {
		return "", err
	}
	return NormalizeKind(kind)
}

// ctxReader fails reads once ctx is done, so an abandoned Put stops.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// leasedBlob is a Blob over a section of some ReaderAt, releasing its
// lease once on Close.
type leasedBlob struct {
	*io.SectionReader
	info      BlobInfo
	closeOnce sync.Once
	onClose   func() error
}

func (b *leasedBlob) Info() BlobInfo { return b.info }

func (b *leasedBlob) Close() error {
	var err error
	b.closeOnce.Do(func() { err = b.onClose() })
	return err
}

func tooLarge(n, limit int64) error {
	return fmt.Errorf("more than %d bytes (read %d): %w", limit, n, ErrBlobTooLarge)
}
