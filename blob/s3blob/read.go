package s3blob

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/skillgate/skillgate/blob"
)

// Stat implements blob.Store.
func (s *Store) Stat(ctx context.Context, id string) (blob.Info, error) {
	info, err := s.stat(ctx, id)
	if err != nil {
		return blob.Info{}, fmt.Errorf("stat %w", err)
	}
	return info, nil
}

// stat reads a blob's metadata; its errors start with the id.
func (s *Store) stat(ctx context.Context, id string) (blob.Info, error) {
	if err := blob.ValidateID(id); err != nil {
		return blob.Info{}, fmt.Errorf("blob: %w", err)
	}
	oi, err := s.c.StatObject(ctx, s.opts.Bucket, s.blobKey(id), minio.StatObjectOptions{})
	if isNotFound(err) {
		return blob.Info{}, fmt.Errorf("%s: %w", id, blob.ErrNotFound)
	}
	if err != nil {
		return blob.Info{}, fmt.Errorf("%s: %w", id, err)
	}
	return infoOf(id, oi)
}

// infoOf reads a blob's metadata back from its object.
func infoOf(id string, oi minio.ObjectInfo) (blob.Info, error) {
	get := func(k string) string {
		for name, v := range oi.UserMetadata {
			if strings.EqualFold(name, k) {
				return v
			}
		}
		return ""
	}
	owner, err1 := url.QueryUnescape(get(metaOwner))
	kind, err2 := url.QueryUnescape(get(metaKind))
	created, err3 := time.Parse(time.RFC3339Nano, get(metaCreated))
	sum := get(metaSHA256)
	if err1 != nil || err2 != nil || err3 != nil || len(sum) != 64 || kind == "" {
		return blob.Info{}, fmt.Errorf("%s: object metadata incomplete: %w", id, blob.ErrNotFound)
	}
	return blob.Info{ID: id, Kind: kind, Size: oi.Size, SHA256: sum, Created: created, Owner: owner}, nil
}

// Open implements blob.Store. Reads are ranged GETs.
func (s *Store) Open(ctx context.Context, id string) (blob.Blob, error) {
	info, err := s.stat(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("open %w", err)
	}
	s.mu.Lock()
	s.leases[id]++
	s.mu.Unlock()
	return &object{s: s, info: info}, nil
}

// object is an open blob: ranged GETs under a lease.
type object struct {
	s    *Store
	info blob.Info
	once sync.Once
}

func (o *object) Info() blob.Info { return o.info }

// ReadAt reads len(p) bytes at off with one ranged GET.
func (o *object) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read %s: negative offset", o.info.ID)
	}
	if off >= o.info.Size || len(p) == 0 {
		if off >= o.info.Size {
			return 0, io.EOF
		}
		return 0, nil
	}
	want := min(int64(len(p)), o.info.Size-off)
	opts := minio.GetObjectOptions{}
	if err := opts.SetRange(off, off+want-1); err != nil {
		return 0, err
	}
	r, err := o.s.c.GetObject(context.Background(), o.s.opts.Bucket, o.s.blobKey(o.info.ID), opts)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", o.info.ID, err)
	}
	defer r.Close()
	n, err := io.ReadFull(r, p[:want])
	if err != nil {
		if isNotFound(err) {
			return n, fmt.Errorf("read %s: removed: %w", o.info.ID, blob.ErrNotFound)
		}
		return n, fmt.Errorf("read %s at %s: %w", o.info.ID, strconv.FormatInt(off, 10), err)
	}
	if want < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

// Close releases the lease; idempotent.
func (o *object) Close() error {
	o.once.Do(func() {
		o.s.mu.Lock()
		if o.s.leases[o.info.ID]--; o.s.leases[o.info.ID] <= 0 {
			delete(o.s.leases, o.info.ID)
		}
		o.s.mu.Unlock()
	})
	return nil
}

// Remove implements blob.Store.
func (s *Store) Remove(ctx context.Context, id string) error {
	info, err := s.stat(ctx, id)
	if err != nil {
		return fmt.Errorf("remove %w", err)
	}
	if err := s.c.RemoveObject(ctx, s.opts.Bucket, s.blobKey(id), minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("remove %s: %w", id, err)
	}
	s.mu.Lock()
	s.count--
	s.bytes -= info.Size
	s.mu.Unlock()
	return nil
}
