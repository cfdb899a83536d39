package s3blob

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/skillgate/skillgate/blob"
)

// PutObject implements blob.Objects; S3 replaces objects atomically.
func (o objects) PutObject(ctx context.Context, key string, r io.Reader) error {
	if err := blob.ValidateKey(key); err != nil {
		return fmt.Errorf("put object: %w", err)
	}
	src := &source{ctx: ctx, r: r, h: discard{}}
	if err := o.s.stream(ctx, o.key(key), src, nil); err != nil {
		return fmt.Errorf("put object %s: %w", key, err)
	}
	return nil
}

// CreateObject is a PUT with If-None-Match: *, which the service decides
// atomically: of several writers of one key, on any replica, one wins.
func (o objects) CreateObject(ctx context.Context, key string, data []byte) error {
	if err := blob.ValidateKey(key); err != nil {
		return fmt.Errorf("create object: %w", err)
	}
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream"}
	opts.SetMatchETagExcept("*")
	_, err := o.s.c.PutObject(ctx, o.s.opts.Bucket, o.key(key), bytes.NewReader(data), int64(len(data)), opts)
	switch {
	case err == nil:
		return nil
	case minio.ToErrorResponse(err).Code == minio.PreconditionFailed:
		return fmt.Errorf("create object %s: %w", key, blob.ErrObjectExists)
	case ctx.Err() != nil:
		return fmt.Errorf("create object %s: %w", key, ctx.Err())
	}
	return fmt.Errorf("create object %s: s3 put: %w", key, err)
}

func (o objects) GetObject(ctx context.Context, key string) (io.ReadCloser, blob.ObjectInfo, error) {
	if err := blob.ValidateKey(key); err != nil {
		return nil, blob.ObjectInfo{}, fmt.Errorf("get object: %w", err)
	}
	r, err := o.s.c.GetObject(ctx, o.s.opts.Bucket, o.key(key), minio.GetObjectOptions{})
	if err == nil {
		var oi minio.ObjectInfo
		if oi, err = r.Stat(); err == nil {
			return notFoundOnRead{r, key}, blob.ObjectInfo{Key: key, Size: oi.Size, Modified: oi.LastModified.UTC()}, nil
		}
		_ = r.Close()
	}
	if isNotFound(err) {
		return nil, blob.ObjectInfo{}, fmt.Errorf("get object %s: %w", key, blob.ErrObjectNotFound)
	}
	return nil, blob.ObjectInfo{}, fmt.Errorf("get object %s: %w", key, err)
}

// notFoundOnRead reports an object deleted between the Stat and the
// first read (the client fetches the body lazily) as ErrObjectNotFound,
// as GetObject itself would have, so that callers tell a race with a
// delete from a failing store.
type notFoundOnRead struct {
	io.ReadCloser
	key string
}

func (r notFoundOnRead) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	switch {
	case err == nil || err == io.EOF:
	case isNotFound(err):
		err = fmt.Errorf("get object %s: %w", r.key, blob.ErrObjectNotFound)
	case minio.ToErrorResponse(err).Code == minio.PreconditionFailed:
		// The client reads on the condition that the object is still the
		// one it found: another writer replaced it meanwhile.
		err = fmt.Errorf("get object %s: %w", r.key, blob.ErrObjectChanged)
	}
	return n, err
}

func (o objects) ListObjects(ctx context.Context, prefix string) ([]blob.ObjectInfo, error) {
	if prefix != "" {
		if err := blob.ValidateKey(strings.TrimSuffix(prefix, "/")); err != nil {
			return nil, fmt.Errorf("list objects: %w", err)
		}
	}
	var out []blob.ObjectInfo
	for oi := range o.s.c.ListObjects(ctx, o.s.opts.Bucket, minio.ListObjectsOptions{Prefix: o.key(prefix), Recursive: true}) {
		if oi.Err != nil {
			return nil, fmt.Errorf("list objects %s: %w", prefix, oi.Err)
		}
		out = append(out, blob.ObjectInfo{Key: strings.TrimPrefix(oi.Key, o.key("")), Size: oi.Size, Modified: oi.LastModified.UTC()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (o objects) DeleteObject(ctx context.Context, key string) error {
	if err := blob.ValidateKey(key); err != nil {
		return fmt.Errorf("delete object: %w", err)
	}
	if err := o.s.c.RemoveObject(ctx, o.s.opts.Bucket, o.key(key), minio.RemoveObjectOptions{}); err != nil && !isNotFound(err) {
		return fmt.Errorf("delete object %s: %w", key, err)
	}
	return nil
}

// discard is a hash.Hash that keeps nothing: objects need no digest.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) Sum(b []byte) []byte         { return b }
func (discard) Reset()                      {}
func (discard) Size() int                   { return 0 }
func (discard) BlockSize() int              { return 1 }
