package blob

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// blobEntry is one committed blob of a store's index.
type blobEntry struct {
	info   Info
	leases int    // open Blobs; guarded by blobIndex.mu
	data   []byte // MemStore only
}

// blobIndex is the bookkeeping both stores share: committed entries, ids
// being written, open leases, usage in total and per owner, and the
// quotas. TTL cleanup takes entries out of the index (under mu) before
// their data goes, so a blob is either leased or removable, never both.
// A Put's bytes are admitted (counted against the quotas) once its size is
// known and before it becomes visible, so concurrent Puts cannot together
// overshoot a quota.
type blobIndex struct {
	mu       sync.Mutex
	entries  map[string]*blobEntry  // guarded by mu
	pending  map[string]*pendingPut // guarded by mu: ids whose Put is running
	bytes    int64                  // guarded by mu: committed and admitted
	owned    map[string]int64       // guarded by mu: bytes per owner, committed and admitted
	closed   bool                   // guarded by mu
	maxBytes int64                  // the store's quota; 0: none
}

// pendingPut is a running Put; owner and size are set once admitted.
type pendingPut struct {
	admitted bool
	owner    string
	size     int64
}

func newBlobIndex(maxBytes int64) blobIndex {
	return blobIndex{entries: map[string]*blobEntry{}, pending: map[string]*pendingPut{},
		owned: map[string]int64{}, maxBytes: maxBytes}
}

// reserve claims id for a Put.
func (x *blobIndex) reserve(id string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	switch {
	case x.closed:
		return ErrStoreClosed
	case x.entries[id] != nil || x.pending[id] != nil:
		return ErrExists
	}
	x.pending[id] = &pendingPut{}
	return nil
}

// unreserve gives up a Put, and the bytes it had admitted.
func (x *blobIndex) unreserve(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if p := x.pending[id]; p != nil && p.admitted {
		x.account(p.owner, -p.size)
	}
	delete(x.pending, id)
}

// checkRoom fails early, before a Put streams anything, when the store or
// the owner is already at its quota.
func (x *blobIndex) checkRoom(owner string, ownerQuota int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.quotaErrLocked(owner, 1, ownerQuota)
}

// admit counts size bytes of the reserved Put id against the quotas.
func (x *blobIndex) admit(id, owner string, size, ownerQuota int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.quotaErrLocked(owner, size, ownerQuota); err != nil {
		return err
	}
	x.account(owner, size)
	if p := x.pending[id]; p != nil {
		*p = pendingPut{admitted: true, owner: owner, size: size}
	}
	return nil
}

// quotaErrLocked says which quota size more bytes of owner would exceed.
func (x *blobIndex) quotaErrLocked(owner string, size, ownerQuota int64) error {
	if x.maxBytes > 0 && x.bytes+size > x.maxBytes {
		return &StorageFullError{Reason: FullStoreQuota, Limit: x.maxBytes, Used: x.bytes, Need: size}
	}
	if used := x.owned[owner]; ownerQuota > 0 && used+size > ownerQuota {
		return &StorageFullError{Reason: FullOwnerQuota, Limit: ownerQuota, Used: used, Need: size}
	}
	return nil
}

// account adds delta bytes to the totals; the caller holds mu.
func (x *blobIndex) account(owner string, delta int64) {
	x.bytes += delta
	if x.owned[owner] += delta; x.owned[owner] <= 0 {
		delete(x.owned, owner)
	}
}

// commit makes an entry visible; its bytes were admitted by its Put, or
// are counted now (blobs found at open).
func (x *blobIndex) commit(e *blobEntry) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if p := x.pending[e.info.ID]; p == nil || !p.admitted {
		x.account(e.info.Owner, e.info.Size)
	}
	delete(x.pending, e.info.ID)
	x.entries[e.info.ID] = e
}

func (x *blobIndex) stat(id string) (Info, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.entries[id]
	if e == nil {
		return Info{}, ErrNotFound
	}
	return e.info, nil
}

// acquire takes a lease on id; release gives it back.
func (x *blobIndex) acquire(id string) (*blobEntry, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.entries[id]
	if e == nil {
		return nil, ErrNotFound
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
		x.account(e.info.Owner, -e.info.Size)
	}
}

// take removes id from the index whether or not it is leased (open Blobs
// keep their data) and returns its entry.
func (x *blobIndex) take(id string) (*blobEntry, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.entries[id]
	if e == nil {
		return nil, ErrNotFound
	}
	delete(x.entries, id)
	x.account(e.info.Owner, -e.info.Size)
	return e, nil
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
			x.account(e.info.Owner, -e.info.Size)
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

func (x *blobIndex) ownerUsage(owner string) int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.owned[owner]
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
	if err := ValidateID(id); err != nil {
		return "", err
	}
	return NormalizeKind(kind)
}

// startPut validates a Put, claims its id and fails early when a quota is
// already used up; the caller must unreserve on any later failure.
func (x *blobIndex) startPut(id string, opts PutOptions) (kind string, err error) {
	if kind, err = checkPut(id, opts.Kind); err != nil {
		return "", fmt.Errorf("put blob: %w", err)
	}
	if err := x.reserve(id); err != nil {
		return "", fmt.Errorf("put %s: %w", id, err)
	}
	if err := x.checkRoom(opts.Owner, opts.OwnerQuota); err != nil {
		x.unreserve(id)
		return "", fmt.Errorf("put %s: %w", id, err)
	}
	return kind, nil
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
	info      Info
	closeOnce sync.Once
	onClose   func() error
}

func (b *leasedBlob) Info() Info { return b.info }

func (b *leasedBlob) Close() error {
	var err error
	b.closeOnce.Do(func() { err = b.onClose() })
	return err
}

func tooLarge(n, limit int64) error {
	return fmt.Errorf("more than %d bytes (read %d): %w", limit, n, ErrTooLarge)
}
