package blob

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Upload defaults.
const (
	// DefaultMaxChunkBytes is the largest chunk upload_chunk takes: small
	// enough that its base64 form fits a default 4 MiB message.
	DefaultMaxChunkBytes = 2 << 20
	// DefaultUploadTTL: an upload without a chunk for this long is removed.
	DefaultUploadTTL = time.Hour
	uploadIDPrefix   = "upload:"
	uploadsPrefix    = "uploads/"
	uploadMetaName   = "meta"
	chunkPrefix      = "c-"
	offsetDigits     = 20 // zero-padded so keys sort by offset
)

// UploadOptions configures Uploads; zero values take the defaults.
type UploadOptions struct {
	// MaxSize is the largest upload Begin accepts; 0: the store's MaxSize.
	MaxSize       int64
	MaxChunkBytes int64
	TTL           time.Duration
	Now           func() time.Time
}

// Uploads are chunked, resumable uploads that end as a blob. Everything
// about a pending upload lives in the store's Objects space (a metadata
// object and one object per chunk, keyed by offset), so any replica
// sharing the store takes the next chunk or finishes the upload. Chunks
// are never updated in place, so replicas need no lock between them.
type Uploads struct {
	store Store
	obj   Objects
	opts  UploadOptions
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
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Uploads{store: store, obj: store.Objects(), opts: opts}
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
	var zero int64
	if err := u.putMeta(ctx, id, uploadMeta{Owner: owner, Kind: kind, Size: size, Created: u.opts.Now().UTC(), Received: &zero}); err != nil {
		return "", fmt.Errorf("begin upload: %w", err)
	}
	return id, nil
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
// is ErrUploadNotFound, like an unknown id.
func (u *Uploads) meta(ctx context.Context, owner, id string) (uploadMeta, error) {
	if err := ValidateUploadID(id); err != nil {
		return uploadMeta{}, err
	}
	rc, _, err := u.obj.GetObject(ctx, u.key(id, uploadMetaName))
	if errors.Is(err, ErrObjectNotFound) {
		return uploadMeta{}, fmt.Errorf("upload %s: %w", id, ErrUploadNotFound)
	}
	if err != nil {
		return uploadMeta{}, err
	}
	defer rc.Close()
	var m uploadMeta
	if err := json.NewDecoder(rc).Decode(&m); err != nil {
		return uploadMeta{}, fmt.Errorf("upload %s: metadata: %w", id, err)
	}
	if m.Owner != owner {
		return uploadMeta{}, fmt.Errorf("upload %s: %w", id, ErrUploadNotFound)
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

// Chunk stores data at offset of upload id and returns the bytes received
// so far. The offset must be where the received bytes end; re-sending a
// chunk already stored (same offset, same bytes) is accepted and changes
// nothing, so a client that lost an answer can simply retry. A hole, an
// overlap with other bytes or bytes past the declared size fail with
// ErrInvalidUpload.
func (u *Uploads) Chunk(ctx context.Context, owner, id string, offset int64, data []byte) (int64, error) {
	m, err := u.meta(ctx, owner, id)
	if err != nil {
		return 0, fmt.Errorf("upload chunk: %w", err)
	}
	var got int64
	if m.Received != nil {
		got = *m.Received
	} else {
		_, chunks, err := u.state(ctx, owner, id)
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
	if err := u.obj.PutObject(ctx, u.key(id, chunkName(offset)), bytes.NewReader(data)); err != nil {
		return got, fmt.Errorf("upload chunk: %w", err)
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
// blob is removed, the upload too (ErrChecksumMismatch).
func (u *Uploads) Finish(ctx context.Context, id string, opts PutOptions, sha256 string) (Info, error) {
	m, chunks, err := u.state(ctx, opts.Owner, id)
	if err != nil {
		return Info{}, fmt.Errorf("finish upload: %w", err)
	}
	if got := received(chunks); got != m.Size {
		return Info{}, fmt.Errorf("finish upload: %d of %d bytes received: %w", got, m.Size, ErrInvalidUpload)
	}
	opts.Kind, opts.SHA256 = m.Kind, strings.ToLower(sha256)
	cr := &chunkReader{ctx: ctx, u: u, chunks: chunks}
	info, err := u.store.Put(ctx, u.store.NewID(), opts, cr)
	cr.close()
	if errors.Is(err, ErrChecksumMismatch) {
		u.remove(context.WithoutCancel(ctx), id)
	}
	if err != nil {
		return Info{}, fmt.Errorf("finish upload: %w", err)
	}
	if info.SHA256 != strings.ToLower(sha256) {
		_ = u.store.Remove(context.WithoutCancel(ctx), info.ID)
		u.remove(context.WithoutCancel(ctx), id)
		return Info{}, fmt.Errorf("finish upload: content sha256 %s: %w", info.SHA256, ErrChecksumMismatch)
	}
	u.remove(context.WithoutCancel(ctx), id)
	return info, nil
}

// remove deletes an upload's objects, the metadata last so that a
// half-removed upload is still found and swept.
func (u *Uploads) remove(ctx context.Context, id string) {
	objs, _ := u.obj.ListObjects(ctx, u.key(id, chunkPrefix))
	for _, o := range objs {
		_ = u.obj.DeleteObject(ctx, o.Key)
	}
	_ = u.obj.DeleteObject(ctx, u.key(id, uploadMetaName))
}

// Sweep removes the uploads that got no chunk for the TTL. Several
// replicas may sweep at once: deleting a missing object is no error.
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
			u.remove(ctx, uploadIDPrefix+h)
			n++
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
