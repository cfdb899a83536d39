package s3blob

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/skillgate/skillgate/blob"
)

// Metadata names (x-amz-meta-<name>). Values are query-escaped: S3
// metadata is ASCII, owners and kinds need not be.
const (
	metaOwner   = "Skillgate-Owner"
	metaKind    = "Skillgate-Kind"
	metaSHA256  = "Skillgate-Sha256"
	metaCreated = "Skillgate-Created"
)

// Put implements blob.Store (see the package doc for the steps).
func (s *Store) Put(ctx context.Context, id string, opts blob.PutOptions, r io.Reader) (blob.Info, error) {
	if err := blob.ValidateID(id); err != nil {
		return blob.Info{}, fmt.Errorf("put blob: %w", err)
	}
	kind, err := blob.NormalizeKind(opts.Kind)
	if err != nil {
		return blob.Info{}, fmt.Errorf("put blob: %w", err)
	}
	if err := s.reserve(id); err != nil {
		return blob.Info{}, fmt.Errorf("put %s: %w", id, err)
	}
	defer s.unreserve(id)
	if _, err := s.Stat(ctx, id); err == nil {
		return blob.Info{}, fmt.Errorf("put %s: %w", id, blob.ErrExists)
	} else if !errors.Is(err, blob.ErrNotFound) {
		return blob.Info{}, fmt.Errorf("put %s: %w", id, err)
	}
	info := blob.Info{ID: id, Kind: kind, Owner: opts.Owner, Created: s.opts.Now().UTC()}
	if err := s.write(ctx, &info, opts.SHA256, r); err != nil {
		return blob.Info{}, fmt.Errorf("put %s: %w", id, err)
	}
	s.mu.Lock()
	s.count++
	s.bytes += info.Size
	s.mu.Unlock()
	return info, nil
}

func (s *Store) reserve(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return blob.ErrStoreClosed
	}
	if _, ok := s.pending[id]; ok {
		return blob.ErrExists
	}
	s.pending[id] = struct{}{}
	return nil
}

func (s *Store) unreserve(id string) {
	s.mu.Lock()
	delete(s.pending, id)
	s.mu.Unlock()
}

// write stores the content at the blob's key. With the digest known up
// front it streams straight there, the digest as metadata, and a content
// that turns out different (or too large) fails the upload before it
// completes, so nothing appears. Otherwise it stages the content, then
// copies it into place with the digest it computed.
func (s *Store) write(ctx context.Context, info *blob.Info, want string, r io.Reader) error {
	h := sha256.New()
	src := &source{ctx: ctx, r: io.LimitReader(r, s.opts.MaxBlobSize+1), h: h, max: s.opts.MaxBlobSize, want: want}
	if want != "" {
		info.SHA256 = want
		if err := s.stream(ctx, s.blobKey(info.ID), src, s.meta(info)); err != nil {
			return err
		}
		info.Size = src.n
		return nil
	}
	staging := s.root + "tmp/" + strings.TrimPrefix(info.ID, "blob:") + "-" + randHex()
	defer func() {
		_ = s.c.RemoveObject(context.WithoutCancel(ctx), s.opts.Bucket, staging, minio.RemoveObjectOptions{})
	}()
	if err := s.stream(ctx, staging, src, nil); err != nil {
		return err
	}
	info.Size, info.SHA256 = src.n, hex.EncodeToString(h.Sum(nil))
	dst := minio.CopyDestOptions{Bucket: s.opts.Bucket, Object: s.blobKey(info.ID), ReplaceMetadata: true, UserMetadata: s.meta(info)}
	if _, err := s.c.ComposeObject(ctx, dst, minio.CopySrcOptions{Bucket: s.opts.Bucket, Object: staging}); err != nil {
		return fmt.Errorf("s3 copy: %w", err)
	}
	return nil
}

// meta is a blob's object metadata.
func (s *Store) meta(info *blob.Info) map[string]string {
	return map[string]string{
		metaOwner: url.QueryEscape(info.Owner), metaKind: url.QueryEscape(info.Kind),
		metaSHA256: info.SHA256, metaCreated: info.Created.Format(time.RFC3339Nano),
	}
}

// stream uploads src to key: small content in one PUT, the rest as a
// multipart upload holding one part in memory. The reader's own error
// wins over the client's report of it, so callers can match it.
func (s *Store) stream(ctx context.Context, key string, src *source, meta map[string]string) error {
	head := make([]byte, smallPut+1)
	n, err := io.ReadFull(src, head)
	var body io.Reader
	size := int64(-1)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		body, size = bytes.NewReader(head[:n]), int64(n)
	case err != nil:
		return err
	default:
		body = io.MultiReader(bytes.NewReader(head), src)
	}
	_, err = s.c.PutObject(ctx, s.opts.Bucket, key, body, size, minio.PutObjectOptions{
		PartSize: uint64(s.opts.PartSize), NumThreads: 1, ContentType: "application/octet-stream", UserMetadata: meta,
	})
	if src.err != nil {
		return src.err
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("s3 put: %w", err)
	}
	return nil
}

// source counts and hashes what it reads and fails once ctx is done. At
// the end it fails instead of reporting EOF when the content passed max
// or differs from the wanted digest, so that an upload in flight aborts.
// It keeps its first error.
type source struct {
	ctx  context.Context
	r    io.Reader
	h    hash.Hash
	n    int64
	max  int64  // 0: no limit
	want string // expected lowercase hex SHA-256; "": any
	err  error
}

func (s *source) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if err := s.ctx.Err(); err != nil {
		s.err = err
		return 0, err
	}
	n, err := s.r.Read(p)
	s.h.Write(p[:n])
	s.n += int64(n)
	switch {
	case err == io.EOF:
		err = s.atEnd()
	case err != nil:
		s.err = err
	}
	return n, err
}

// atEnd checks the whole content.
func (s *source) atEnd() error {
	switch {
	case s.max > 0 && s.n > s.max:
		s.err = fmt.Errorf("more than %d bytes: %w", s.max, blob.ErrTooLarge)
	case s.want != "" && hex.EncodeToString(s.h.Sum(nil)) != s.want:
		s.err = fmt.Errorf("content sha256 differs: %w", blob.ErrChecksumMismatch)
	default:
		return io.EOF
	}
	return s.err
}

func randHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
