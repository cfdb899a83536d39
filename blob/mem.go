package blob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"time"
)

// MemOptions configures a MemStore; zero values as in FSOptions.
type MemOptions struct {
	MaxBlobSize   int64
	MaxStoreBytes int64
	TTL           time.Duration
	Now           func() time.Time
}

// MemStore is an in-memory Store with the semantics of FSStore (size
// limit, TTL, leases) and no persistence or janitor: call Sweep. For tests
// and single-process tools.
type MemStore struct {
	max int64
	ttl time.Duration
	now func() time.Time
	idx blobIndex
	obj *memObjects
}

// NewMemStore returns an empty store.
func NewMemStore(opts MemOptions) *MemStore {
	s := &MemStore{max: opts.MaxBlobSize, ttl: opts.TTL, now: opts.Now, idx: newBlobIndex(opts.MaxStoreBytes)}
	if s.max <= 0 {
		s.max = DefaultMaxSize
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.obj = &memObjects{now: s.now, objs: map[string]memObject{}}
	return s
}

// NewID implements Store.
func (s *MemStore) NewID() string { return NewID() }

// Put implements Store.
func (s *MemStore) Put(ctx context.Context, id string, opts PutOptions, r io.Reader) (Info, error) {
	if opts.Size > s.max {
		return Info{}, fmt.Errorf("put %s: %w", id, tooLarge(opts.Size, s.max))
	}
	kind, err := s.idx.startPut(id, opts)
	if err != nil {
		return Info{}, err
	}
	data, err := io.ReadAll(io.LimitReader(ctxReader{ctx, r}, s.max+1))
	if err == nil && int64(len(data)) > s.max {
		err = tooLarge(int64(len(data)), s.max)
	}
	sum := sha256.Sum256(data)
	if err == nil {
		err = checkSum(opts.SHA256, hex.EncodeToString(sum[:]))
	}
	if err == nil {
		err = s.idx.admit(id, opts.Owner, int64(len(data)), opts.OwnerQuota, opts.upload)
	}
	if err != nil {
		s.idx.unreserve(id)
		return Info{}, fmt.Errorf("put %s: %w", id, err)
	}
	info := Info{ID: id, Kind: kind, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]),
		Created: s.now().UTC(), Owner: opts.Owner}
	s.idx.commit(&blobEntry{info: info, data: data})
	return info, nil
}

// Stat implements Store.
func (s *MemStore) Stat(_ context.Context, id string) (Info, error) {
	info, err := s.idx.stat(id)
	if err != nil {
		return Info{}, fmt.Errorf("stat %s: %w", clipActual(id), err)
	}
	return info, nil
}

// Open implements Store.
func (s *MemStore) Open(_ context.Context, id string) (Blob, error) {
	e, err := s.idx.acquire(id)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", clipActual(id), err)
	}
	r := bytes.NewReader(e.data)
	return &leasedBlob{SectionReader: io.NewSectionReader(r, 0, e.info.Size), info: e.info,
		onClose: func() error { s.idx.release(e); return nil }}, nil
}

// Remove implements Store.
func (s *MemStore) Remove(_ context.Context, id string) error {
	if _, err := s.idx.take(id); err != nil {
		return fmt.Errorf("remove %s: %w", clipActual(id), err)
	}
	return nil
}

// Sweep implements Store.
func (s *MemStore) Sweep(_ context.Context) (int, error) {
	if s.ttl <= 0 {
		return 0, nil
	}
	return len(s.idx.takeExpired(s.now(), s.ttl)), nil
}

// Usage implements Store.
func (s *MemStore) Usage() (int, int64) { return s.idx.usage() }

// OwnerUsage implements Store.
func (s *MemStore) OwnerUsage(owner string) int64 { return s.idx.ownerUsage(owner) }

// Close implements Store.
func (s *MemStore) Close() error {
	s.idx.close()
	return nil
}

// Objects implements Store.
func (s *MemStore) Objects() Objects { return s.obj }

// MaxSize implements Store.
func (s *MemStore) MaxSize() int64 { return s.max }
