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
// overshoot a quota. The chunks of unfinished uploads are held against
// the same quotas as they arrive, and a finished upload's hold becomes its
// blob's bytes in one step.
type blobIndex struct {
	mu       sync.Mutex
	entries  map[string]*blobEntry  // guarded by mu
	pending  map[string]*pendingPut // guarded by mu: ids whose Put is running
	bytes    int64                  // guarded by mu: committed, admitted and held
	owned    map[string]int64       // guarded by mu: bytes per owner, committed, admitted and held
	held     map[string]*uploadHold // guarded by mu: by upload id
	heldAll  int64                  // guarded by mu: the bytes of every hold
	heldBy   map[string]int64       // guarded by mu: the bytes of holds per owner
	closed   bool                   // guarded by mu
	maxBytes int64                  // the store's quota; 0: none
}

// pendingPut is a running Put; owner and size are set once admitted,
// and the upload hold it took over (if any) goes back if it fails.
type pendingPut struct {
	admitted bool
	owner    string
	size     int64
	upload   string
	hold     *uploadHold
}

// uploadHold is the bytes of an unfinished upload's stored chunks.
type uploadHold struct {
	owner string
	n     int64
}

func newBlobIndex(maxBytes int64) blobIndex {
	return blobIndex{entries: map[string]*blobEntry{}, pending: map[string]*pendingPut{},
		owned: map[string]int64{}, held: map[string]*uploadHold{}, heldBy: map[string]int64{}, maxBytes: maxBytes}
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

// unreserve gives up a Put, and the bytes it had admitted; an upload's
// hold it took over is held again.
func (x *blobIndex) unreserve(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if p := x.pending[id]; p != nil && p.admitted {
		x.account(p.owner, -p.size)
		if p.hold != nil {
			x.addHoldLocked(p.upload, p.hold)
		}
	}
	delete(x.pending, id)
}

// checkRoom fails early, before a Put streams anything, when the store or
// the owner has no room for need bytes (at least 1), not counting the
// hold of the upload the Put finishes.
func (x *blobIndex) checkRoom(owner string, need, ownerQuota int64, upload string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	need = max(need, 1)
	if h := x.held[upload]; h != nil && h.owner == owner {
		need -= h.n
	}
	if need <= 0 {
		return nil
	}
	return x.quotaErrLocked(owner, need, ownerQuota)
}

// admit counts size bytes of the reserved Put id against the quotas. A
// Put that finishes an upload takes over the upload's hold: those bytes
// are on disk already and count once.
func (x *blobIndex) admit(id, owner string, size, ownerQuota int64, upload string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	h := x.held[upload]
	if h != nil {
		x.dropHoldLocked(upload)
	}
	if err := x.quotaErrLocked(owner, size, ownerQuota); err != nil {
		if h != nil {
			x.addHoldLocked(upload, h)
		}
		return err
	}
	x.account(owner, size)
	if p := x.pending[id]; p != nil {
		*p = pendingPut{admitted: true, owner: owner, size: size, upload: upload, hold: h}
	}
	return nil
}

// hold counts n more bytes of upload's chunks against the quotas, unless
// check is false (chunks found on disk at open, which are there anyway).
func (x *blobIndex) hold(upload, owner string, n, ownerQuota int64, check bool) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return ErrStoreClosed
	}
	if check {
		if err := x.quotaErrLocked(owner, n, ownerQuota); err != nil {
			err.(*StorageFullError).chunk = true
			return err
		}
	}
	h := x.held[upload]
	if h == nil {
		h = &uploadHold{owner: owner}
		x.held[upload] = h
	}
	h.n += n
	x.account(owner, n)
	x.heldAll += n
	x.heldBy[owner] += n
	return nil
}

// unhold gives back n bytes of upload's hold, all of them when n < 0.
func (x *blobIndex) unhold(upload string, n int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	h := x.held[upload]
	if h == nil {
		return
	}
	x.dropHoldLocked(upload)
	if n >= 0 && n < h.n {
		x.addHoldLocked(upload, &uploadHold{owner: h.owner, n: h.n - n})
	}
}

func (x *blobIndex) addHoldLocked(upload string, h *uploadHold) {
	x.held[upload] = h
	x.account(h.owner, h.n)
	x.heldAll += h.n
	x.heldBy[h.owner] += h.n
}

func (x *blobIndex) dropHoldLocked(upload string) {
	h := x.held[upload]
	delete(x.held, upload)
	x.account(h.owner, -h.n)
	x.heldAll -= h.n
	if x.heldBy[h.owner] -= h.n; x.heldBy[h.owner] <= 0 {
		delete(x.heldBy, h.owner)
	}
}

// quotaErrLocked says which quota size more bytes of owner would exceed.
func (x *blobIndex) quotaErrLocked(owner string, size, ownerQuota int64) error {
	if x.maxBytes > 0 && x.bytes+size > x.maxBytes {
		return &StorageFullError{Reason: FullStoreQuota, Limit: x.maxBytes, Used: x.bytes, Need: size, Pending: x.heldAll}
	}
	if used := x.owned[owner]; ownerQuota > 0 && used+size > ownerQuota {
		return &StorageFullError{Reason: FullOwnerQuota, Limit: ownerQuota, Used: used, Need: size, Pending: x.heldBy[owner]}
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

// usage is the blobs' count and bytes; uploads' holds are not blobs.
func (x *blobIndex) usage() (int, int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.entries), x.bytes - x.heldAll
}

func (x *blobIndex) ownerUsage(owner string) int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.owned[owner] - x.heldBy[owner]
}

// pendingUsage is the bytes unfinished uploads hold.
func (x *blobIndex) pendingUsage() int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.heldAll
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
	if err := x.checkRoom(opts.Owner, opts.Size, opts.OwnerQuota, opts.upload); err != nil {
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
