package blob

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Upload defaults.
const (
	// DefaultMaxChunkBytes is the largest chunk upload_chunk takes: small
	// enough that its base64 form fits a default 4 MiB message.
	DefaultMaxChunkBytes = 2 << 20
	// DefaultUploadTTL: an upload without a chunk for this long is removed.
	DefaultUploadTTL = time.Hour
	// DefaultMaxPendingUploads is how many unfinished uploads one owner
	// may have at once.
	DefaultMaxPendingUploads = 16
	// DefaultClaimTimeout: a finish's claim on its upload that was not
	// refreshed for this long belongs to a gateway that died mid-finish,
	// and another finish takes it over.
	DefaultClaimTimeout = 10 * time.Second
	uploadIDPrefix      = "upload:"
	uploadsPrefix       = "uploads/"
	uploadMetaName      = "meta"
	// uploadClaimName is the object a finish creates to claim the upload:
	// of concurrent finishes, on any replicas, only its creator goes on.
	uploadClaimName = "finish"
	// ownersPrefix holds one empty marker per unfinished upload under a
	// digest of its owner, so that an owner's uploads are counted by one
	// listing: upload-owners/<owner digest>/<upload hex>.
	ownersPrefix = "upload-owners/"
	chunkPrefix  = "c-"
	offsetDigits = 20 // zero-padded so keys sort by offset
)

// UploadOptions configures Uploads; zero values take the defaults.
type UploadOptions struct {
	// MaxSize is the largest upload Begin accepts; 0: the store's MaxSize.
	MaxSize       int64
	MaxChunkBytes int64
	// MaxPending bounds the unfinished uploads of one owner; 0:
	// DefaultMaxPendingUploads.
	MaxPending int
	// ClaimTimeout: see DefaultClaimTimeout; 0 means that.
	ClaimTimeout time.Duration
	TTL          time.Duration
	Now          func() time.Time
}

// Uploads are chunked, resumable uploads that end as a blob. Everything
// about a pending upload lives in the store's Objects space (a metadata
// object and one object per chunk, keyed by offset), so any replica
// sharing the store takes the next chunk or finishes the upload.
//
// Replicas need no lock between them: a chunk is created only where no
// object is (CreateObject), so of two chunks sent at one offset at once
// one is stored and the other is compared with it, and a finish first
// creates the upload's claim object, so that exactly one of several
// finishes makes the blob. Within a process, calls on one upload take
// turns. A store that enforces quotas (the filesystem and memory stores)
// counts each chunk against the store's and the owner's quota when it
// arrives, and the finished blob takes over those bytes.
type Uploads struct {
	store  Store
	obj    Objects
	holds  holder // nil: the store counts no quotas
	opts   UploadOptions
	byID   keyedMutex // one call at a time per upload
	byUser keyedMutex // one Begin at a time per owner
}

// uploadMeta is what Begin records; Chunk rewrites it after each chunk
// with the bytes received, so that a chunk costs a read and two writes
// whatever the number of chunks before it.
type uploadMeta struct {
	Owner   string    `json:"owner"`
	Kind    string    `json:"kind"`
	Size    int64     `json:"size"`
	Created time.Time `json:"created"`
	// Received counts the contiguous bytes stored from offset 0; nil in
	// the metadata of an upload begun before it was kept, whose chunks
	// are then listed.
	Received *int64 `json:"received,omitempty"`
	// BlobID is the id the finished blob gets, fixed at Begin, so that
	// finishes that overlap (one taking over the claim of a gateway that
	// died, or that died after storing the blob) make one blob; empty
	// for uploads begun before it was kept.
	BlobID string `json:"blob_id,omitempty"`
}

// NewUploads returns the uploads kept in store.
func NewUploads(store Store, opts UploadOptions) *Uploads {
	if opts.MaxChunkBytes <= 0 {
		opts.MaxChunkBytes = DefaultMaxChunkBytes
	}
	if opts.MaxSize <= 0 {
		opts.MaxSize = store.MaxSize()
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultUploadTTL
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = DefaultMaxPendingUploads
	}
	if opts.ClaimTimeout <= 0 {
		opts.ClaimTimeout = DefaultClaimTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	h, _ := store.(holder)
	return &Uploads{store: store, obj: store.Objects(), holds: h, opts: opts}
}

// MaxChunkBytes is the largest chunk Chunk takes.
func (u *Uploads) MaxChunkBytes() int64 { return u.opts.MaxChunkBytes }

// Begin starts an upload of size bytes of kind for owner (ErrTooLarge
// past MaxSize).
func (u *Uploads) Begin(ctx context.Context, owner, kind string, size int64) (string, error) {
	maxSize := u.opts.MaxSize
	kind, err := NormalizeKind(kind)
	if err != nil {
		return "", fmt.Errorf("begin upload: %w", err)
	}
	if size < 0 || size > maxSize {
		return "", fmt.Errorf("begin upload: %d bytes: %w", size, tooLarge(size, maxSize))
	}
	id := newUploadID()
	if err := u.mark(ctx, owner, id); err != nil {
		return "", fmt.Errorf("begin upload: %w", err)
	}
	var zero int64
	if err := u.putMeta(ctx, id, uploadMeta{Owner: owner, Kind: kind, Size: size, Created: u.opts.Now().UTC(), Received: &zero, BlobID: u.store.NewID()}); err != nil {
		_ = u.obj.DeleteObject(context.WithoutCancel(ctx), ownerMarker(owner, id))
		return "", fmt.Errorf("begin upload: %w", err)
	}
	return id, nil
}

// mark records upload id under its owner, unless the owner has
// MaxPending unfinished uploads already. The marker is created first and
// the owner's markers counted after, so that replicas beginning uploads
// at once may refuse begins that would have fit (a retry succeeds) but
// never take one too many. Within a process, begins of one owner take
// turns and are exact.
func (u *Uploads) mark(ctx context.Context, owner, id string) error {
	defer u.byUser.lock(owner)()
	marker := ownerMarker(owner, id)
	if err := u.obj.CreateObject(ctx, marker, nil); err != nil {
		return err
	}
	objs, err := u.obj.ListObjects(ctx, ownerDir(owner))
	if err == nil && len(objs) > u.opts.MaxPending {
		err = &StorageFullError{Reason: FullPendingUploads, Limit: int64(u.opts.MaxPending), Used: int64(len(objs) - 1)}
	}
	if err != nil {
		_ = u.obj.DeleteObject(context.WithoutCancel(ctx), marker)
		return err
	}
	return nil
}

// ownerDir is the folder of owner's upload markers: a digest, since an
// owner's name need not be a valid key segment.
func ownerDir(owner string) string {
	sum := sha256.Sum256([]byte(owner))
	return ownersPrefix + hex.EncodeToString(sum[:idHexLen/2]) + "/"
}

func ownerMarker(owner, id string) string {
	return ownerDir(owner) + strings.TrimPrefix(id, uploadIDPrefix)
}

func (u *Uploads) putMeta(ctx context.Context, id string, m uploadMeta) error {
	meta, _ := json.Marshal(m)
	return u.obj.PutObject(ctx, u.key(id, uploadMetaName), bytes.NewReader(meta))
}

func newUploadID() string {
	var b [idHexLen / 2]byte
	_, _ = rand.Read(b[:])
	return uploadIDPrefix + hex.EncodeToString(b[:])
}

// ValidateUploadID checks an upload id ("upload:" + 32 lowercase hex).
func ValidateUploadID(id string) error {
	h, ok := strings.CutPrefix(id, uploadIDPrefix)
	if !ok || len(h) != idHexLen || !isLowerHex(h) {
		return fmt.Errorf("%q: %w", clipActual(id), ErrUploadNotFound)
	}
	return nil
}

func (u *Uploads) key(id, name string) string {
	return uploadsPrefix + id[len(uploadIDPrefix):] + "/" + name
}

func chunkName(off int64) string {
	return fmt.Sprintf("%s%0*d", chunkPrefix, offsetDigits, off)
}

// chunk is one stored chunk of an upload.
type chunk struct {
	key       string
	off, size int64
}

// meta loads the metadata of an upload of owner. Another owner's upload
// is ErrUploadNotFound, like an unknown id. Each chunk rewrites the
// metadata, so a read that another replica's chunk overtook
// (ErrObjectChanged) is read again, a bounded number of times.
func (u *Uploads) meta(ctx context.Context, owner, id string) (uploadMeta, error) {
	if err := ValidateUploadID(id); err != nil {
		return uploadMeta{}, err
	}
	for attempt := 1; ; attempt++ {
		m, err := u.readMeta(ctx, id)
		if errors.Is(err, ErrObjectChanged) && attempt < metaReadAttempts && ctx.Err() == nil {
			continue
		}
		if err != nil {
			return uploadMeta{}, err
		}
		if m.Owner != owner {
			return uploadMeta{}, fmt.Errorf("upload %s: %w", id, ErrUploadNotFound)
		}
		return m, nil
	}
}

// metaReadAttempts bounds the reads of an upload's metadata that writers
// keep overtaking: one per chunk racing at once is plenty.
const metaReadAttempts = 8

func (u *Uploads) readMeta(ctx context.Context, id string) (uploadMeta, error) {
	rc, _, err := u.obj.GetObject(ctx, u.key(id, uploadMetaName))
	if errors.Is(err, ErrObjectNotFound) {
		return uploadMeta{}, fmt.Errorf("upload %s: %w", id, ErrUploadNotFound)
	}
	if err != nil {
		return uploadMeta{}, err
	}
	defer rc.Close()
	var m uploadMeta
	if err := json.NewDecoder(rc).Decode(&m); errors.Is(err, ErrObjectNotFound) {
		// Removed between the open and the read: a finish that won.
		return uploadMeta{}, fmt.Errorf("upload %s: %w", id, ErrUploadNotFound)
	} else if err != nil {
		return uploadMeta{}, fmt.Errorf("upload %s: metadata: %w", id, err)
	}
	return m, nil
}

// state loads an upload of owner: its metadata and its chunks by offset.
func (u *Uploads) state(ctx context.Context, owner, id string) (uploadMeta, []chunk, error) {
	m, err := u.meta(ctx, owner, id)
	if err != nil {
		return uploadMeta{}, nil, err
	}
	objs, err := u.obj.ListObjects(ctx, u.key(id, chunkPrefix))
	if err != nil {
		return uploadMeta{}, nil, err
	}
	chunks := make([]chunk, 0, len(objs))
	for _, o := range objs {
		off, err := strconv.ParseInt(o.Key[strings.LastIndex(o.Key, "/")+1+len(chunkPrefix):], 10, 64)
		if err == nil {
			chunks = append(chunks, chunk{key: o.Key, off: off, size: o.Size})
		}
	}
	return m, chunks, nil
}

// received is the count of contiguous bytes from offset 0.
func received(chunks []chunk) int64 {
	var n int64
	for _, c := range chunks {
		if c.off != n {
			break
		}
		n += c.size
	}
	return n
}

// Chunk stores data at offset of upload id of opts.Owner and returns the
// bytes received so far. The offset must be where the received bytes
// end; re-sending a chunk already stored (same offset, same bytes) is
// accepted and changes nothing, so a client that lost an answer can
// simply retry. A hole, an overlap with other bytes or bytes past the
// declared size fail with ErrInvalidUpload. On a store that counts
// quotas, a chunk that does not fit the store's or opts.OwnerQuota fails
// with a *StorageFullError and is not stored.
func (u *Uploads) Chunk(ctx context.Context, id string, opts PutOptions, offset int64, data []byte) (int64, error) {
	if err := ValidateUploadID(id); err != nil {
		return 0, fmt.Errorf("upload chunk: %w", err)
	}
	defer u.byID.lock(id)()
	m, err := u.meta(ctx, opts.Owner, id)
	if err != nil {
		return 0, fmt.Errorf("upload chunk: %w", err)
	}
	var got int64
	if m.Received != nil {
		got = *m.Received
	} else {
		_, chunks, err := u.state(ctx, opts.Owner, id)
		if err != nil {
			return 0, fmt.Errorf("upload chunk: %w", err)
		}
		got = received(chunks)
	}
	switch {
	case int64(len(data)) > u.opts.MaxChunkBytes:
		return got, fmt.Errorf("upload chunk: %d bytes, at most %d per chunk: %w", len(data), u.opts.MaxChunkBytes, ErrInvalidUpload)
	case len(data) == 0:
		return got, fmt.Errorf("upload chunk: empty chunk: %w", ErrInvalidUpload)
	case offset < got:
		return got, u.checkResent(ctx, id, offset, data)
	case offset > got:
		return got, fmt.Errorf("upload chunk: offset %d leaves a hole: %d bytes received so far: %w", offset, got, ErrInvalidUpload)
	case offset+int64(len(data)) > m.Size:
		return got, fmt.Errorf("upload chunk: bytes %d-%d lie past the declared size %d: %w", offset, offset+int64(len(data)), m.Size, ErrInvalidUpload)
	}
	if err := u.storeChunk(ctx, id, opts, offset, data); err != nil {
		return got, err
	}
	// The chunk is stored before the count says so: a crash between the
	// two leaves a chunk the client resends, never a count past the
	// bytes stored.
	got += int64(len(data))
	m.Received = &got
	if err := u.putMeta(ctx, id, m); err != nil {
		return got - int64(len(data)), fmt.Errorf("upload chunk: %w", err)
	}
	return got, nil
}

// storeChunk holds the chunk's bytes against the quotas and creates its
// object. A chunk already at that offset (another replica's concurrent
// call, or one stored before a crash cut its call short) is taken when
// its bytes are the same and refused otherwise.
func (u *Uploads) storeChunk(ctx context.Context, id string, opts PutOptions, offset int64, data []byte) error {
	n := int64(len(data))
	if u.holds != nil {
		if err := u.holds.holdUpload(id, opts.Owner, n, opts.OwnerQuota); err != nil {
			return fmt.Errorf("upload chunk: %w", err)
		}
	}
	err := u.obj.CreateObject(ctx, u.key(id, chunkName(offset)), data)
	if err != nil && u.holds != nil {
		u.holds.unholdUpload(id, n)
	}
	if errors.Is(err, ErrObjectExists) {
		return u.checkResent(ctx, id, offset, data)
	}
	if err != nil {
		return fmt.Errorf("upload chunk: %w", err)
	}
	return nil
}

// checkResent accepts a chunk identical to the one stored at offset.
func (u *Uploads) checkResent(ctx context.Context, id string, offset int64, data []byte) error {
	stored, err := u.readChunk(ctx, chunk{key: u.key(id, chunkName(offset))})
	if err != nil && !errors.Is(err, ErrObjectNotFound) {
		return fmt.Errorf("upload chunk: %w", err)
	}
	if err == nil && bytes.Equal(stored, data) {
		return nil
	}
	return fmt.Errorf("upload chunk: bytes at offset %d overlap bytes already received with different content: %w", offset, ErrInvalidUpload)
}

func (u *Uploads) readChunk(ctx context.Context, c chunk) ([]byte, error) {
	rc, _, err := u.obj.GetObject(ctx, c.key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, u.opts.MaxChunkBytes+1))
}

// Finish turns a complete upload into a blob and removes the upload. A
// sha256 (lowercase hex) that differs from the content keeps nothing: the
// blob is removed, the upload too (ErrChecksumMismatch). Of several
// finishes of one upload, on any replicas, exactly one makes the blob:
// it claims the upload, and the others wait for the claim to go, then
// fail with ErrUploadNotFound (or ErrUploadFinishing when the claim
// outlasts ClaimTimeout and its holder still refreshes it). A claim
// whose holder died is taken over once it is ClaimTimeout old. A finish
// that fails otherwise (a full store) leaves the upload to be finished
// again.
func (u *Uploads) Finish(ctx context.Context, id string, opts PutOptions, sum string) (Info, error) {
	if err := ValidateUploadID(id); err != nil {
		return Info{}, fmt.Errorf("finish upload: %w", err)
	}
	defer u.byID.lock(id)()
	if _, err := u.meta(ctx, opts.Owner, id); err != nil {
		return Info{}, fmt.Errorf("finish upload: %w", err)
	}
	claim := u.key(id, uploadClaimName)
	if err := u.claim(ctx, id, opts.Owner, claim); err != nil {
		return Info{}, fmt.Errorf("finish upload: %w", err)
	}
	stop := u.keepClaim(claim)
	info, err := u.finishClaimed(ctx, id, opts, strings.ToLower(sum))
	stop()
	switch {
	case err == nil, errors.Is(err, ErrChecksumMismatch):
		u.remove(context.WithoutCancel(ctx), id, opts.Owner)
	default:
		_ = u.obj.DeleteObject(context.WithoutCancel(ctx), claim)
	}
	if err != nil {
		return Info{}, fmt.Errorf("finish upload: %w", err)
	}
	return info, nil
}

// claim creates the upload's claim object. While another finish holds a
// fresh claim, claim waits: until the claim goes (with the upload, which
// is then ErrUploadNotFound, or given back after a failure), until it is
// stale (its holder died: taken over), or until ClaimTimeout and a bit
// more passed (ErrUploadFinishing). Finishes that take over a claim at
// once make one blob still: the blob's id is fixed at Begin.
func (u *Uploads) claim(ctx context.Context, id, owner, key string) error {
	timeout := u.opts.ClaimTimeout
	poll := min(timeout/20, 100*time.Millisecond)
	deadline := time.Now().Add(timeout + timeout/4)
	for {
		err := u.obj.CreateObject(ctx, key, nil)
		if !errors.Is(err, ErrObjectExists) {
			return err
		}
		rc, info, err := u.obj.GetObject(ctx, key)
		switch {
		case err == nil:
			_ = rc.Close()
			if info.Modified.Before(u.opts.Now().Add(-timeout)) {
				return u.obj.PutObject(ctx, key, bytes.NewReader(nil))
			}
		case !errors.Is(err, ErrObjectNotFound):
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("upload %s: %w", id, ErrUploadFinishing)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
		if _, err := u.meta(ctx, owner, id); err != nil {
			return err
		}
	}
}

// keepClaim refreshes the claim object while a finish works, so that it
// never looks abandoned; the returned stop ends that and waits for it.
func (u *Uploads) keepClaim(key string) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(u.opts.ClaimTimeout / 4)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				// Bounded, so that a store that stops answering cannot
				// keep the finish from returning.
				ctx, cancel := context.WithTimeout(context.Background(), u.opts.ClaimTimeout)
				_ = u.obj.PutObject(ctx, key, bytes.NewReader(nil))
				cancel()
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

// finishClaimed streams the chunks of a claimed upload into a blob. The
// state is read after the claim, so that an upload another finish
// completed meanwhile is found gone.
func (u *Uploads) finishClaimed(ctx context.Context, id string, opts PutOptions, sum string) (Info, error) {
	m, chunks, err := u.state(ctx, opts.Owner, id)
	if err != nil {
		return Info{}, err
	}
	if got := received(chunks); got != m.Size {
		return Info{}, fmt.Errorf("%d of %d bytes received: %w", got, m.Size, ErrInvalidUpload)
	}
	opts.Kind, opts.SHA256, opts.Size, opts.upload = m.Kind, sum, m.Size, id
	blobID := m.BlobID
	if blobID == "" {
		blobID = u.store.NewID()
	}
	cr := &chunkReader{ctx: ctx, u: u, chunks: chunks}
	info, err := u.store.Put(ctx, blobID, opts, cr)
	cr.close()
	if errors.Is(err, ErrExists) {
		// An earlier finish stored the blob and did not get to remove
		// the upload: that blob is the answer.
		if prev, serr := u.store.Stat(ctx, blobID); serr == nil && prev.Owner == opts.Owner && prev.SHA256 == sum {
			return prev, nil
		}
	}
	if err != nil {
		return Info{}, err
	}
	if info.SHA256 != sum {
		_ = u.store.Remove(context.WithoutCancel(ctx), info.ID)
		return Info{}, fmt.Errorf("content sha256 %s: %w", info.SHA256, ErrChecksumMismatch)
	}
	return info, nil
}

// remove deletes an upload's objects and gives back its hold: the chunks
// first, then the metadata (so that a half-removed upload is still found
// and swept), then the claim (so that a finish racing the removal finds
// the upload claimed or gone, never free with chunks missing), then the
// owner's marker when the owner is known.
func (u *Uploads) remove(ctx context.Context, id, owner string) {
	objs, _ := u.obj.ListObjects(ctx, u.key(id, chunkPrefix))
	for _, o := range objs {
		_ = u.obj.DeleteObject(ctx, o.Key)
	}
	_ = u.obj.DeleteObject(ctx, u.key(id, uploadMetaName))
	_ = u.obj.DeleteObject(ctx, u.key(id, uploadClaimName))
	if owner != "" {
		_ = u.obj.DeleteObject(ctx, ownerMarker(owner, id))
	}
	if u.holds != nil {
		u.holds.unholdUpload(id, -1)
	}
}

// Sweep removes the uploads that got no chunk for the TTL, and the owner
// markers of uploads that are gone. Several replicas may sweep at once:
// deleting a missing object is no error.
func (u *Uploads) Sweep(ctx context.Context) (int, error) {
	objs, err := u.obj.ListObjects(ctx, uploadsPrefix)
	if err != nil {
		return 0, fmt.Errorf("sweep uploads: %w", err)
	}
	newest := map[string]time.Time{}
	for _, o := range objs {
		rest := strings.TrimPrefix(o.Key, uploadsPrefix)
		h, _, _ := strings.Cut(rest, "/")
		if o.Modified.After(newest[h]) {
			newest[h] = o.Modified
		}
	}
	cutoff := u.opts.Now().Add(-u.opts.TTL)
	n := 0
	for h, t := range newest {
		if t.Before(cutoff) {
			u.remove(ctx, uploadIDPrefix+h, "")
			delete(newest, h)
			n++
		}
	}
	markers, err := u.obj.ListObjects(ctx, ownersPrefix)
	if err != nil {
		return n, fmt.Errorf("sweep uploads: %w", err)
	}
	for _, o := range markers {
		// A marker younger than the TTL may belong to an upload being
		// begun, whose metadata is not written yet.
		if _, live := newest[o.Key[strings.LastIndex(o.Key, "/")+1:]]; !live && o.Modified.Before(cutoff) {
			_ = u.obj.DeleteObject(ctx, o.Key)
		}
	}
	return n, ctx.Err()
}

// chunkReader reads an upload's chunks in order, one open at a time, so
// finishing an upload of any size holds one chunk's buffer at most.
type chunkReader struct {
	ctx    context.Context
	u      *Uploads
	chunks []chunk
	cur    io.ReadCloser
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for {
		if r.cur == nil {
			if len(r.chunks) == 0 {
				return 0, io.EOF
			}
			rc, _, err := r.u.obj.GetObject(r.ctx, r.chunks[0].key)
			if err != nil {
				return 0, fmt.Errorf("read chunk: %w", err)
			}
			r.cur, r.chunks = rc, r.chunks[1:]
		}
		n, err := r.cur.Read(p)
		if err == io.EOF {
			_ = r.cur.Close()
			r.cur = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

// close closes the chunk being read, if any.
func (r *chunkReader) close() {
	if r.cur != nil {
		_ = r.cur.Close()
		r.cur = nil
	}
}

// keyedMutex is a mutex per key, kept only while someone holds or waits
// for it.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyLock // guarded by mu
}

type keyLock struct {
	sync.Mutex
	refs int // guarded by keyedMutex.mu
}

// lock locks key and returns its unlock.
func (k *keyedMutex) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyLock{}
		k.locks[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}
