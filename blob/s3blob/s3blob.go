// Package s3blob is the S3-compatible blob.Store: blobs, the Objects space
// and pending uploads in one bucket under one prefix, so that any number
// of gateway replicas share them. It is the only package that talks to an
// object store (github.com/minio/minio-go/v7).
//
// # Layout
//
//	<prefix>/blobs/<32 hex>   a blob; owner, kind, sha256 and created are
//	                          object metadata (x-amz-meta-skillgate-*)
//	<prefix>/tmp/<32 hex>-…   a Put being written (never read as a blob)
//	<prefix>/kv/<key>         the Objects space (uploads/, runs/, …)
//
// # Writes
//
// A Put that knows its SHA-256 (PutOptions.SHA256) streams straight to
// blobs/<id> with the metadata, and a content that turns out different or
// too large fails the multipart upload before it completes. Otherwise a
// Put streams the content into a staging object under tmp/ (a multipart
// upload in parts of PartSize bytes, so memory stays at one part whatever
// the blob's size; blobs under one part go up in one request), hashing it
// on the way, then copies it server-side to blobs/<id> with the metadata
// and deletes the staging object. The blob's key therefore exists only
// complete and with its SHA-256: a process killed mid-upload leaves an
// incomplete multipart upload or a staging object, which the sweep removes
// after StagingTTL, never a visible partial blob.
//
// # Sweeps
//
// Every replica sweeps: expired blobs (by Last-Modified, which is the
// time of the server-side copy) not leased by this process, staging
// objects and incomplete multipart uploads older than StagingTTL. Removing
// an object that another replica removed first is no error in S3, so
// replicas sweeping at once only repeat each other's work. MinIO lists
// incomplete multipart uploads only per object, so there a bucket
// lifecycle rule (AbortIncompleteMultipartUpload) must clear them.
//
// # Limits
//
// Leases are per process (see package blob). Usage is what the last sweep
// listed plus this process's writes since; the store's byte quota and
// owners' quotas are not enforced on S3, neither for blobs nor for the
// chunks of unfinished uploads (a bucket quota is the tool: it counts
// both). CreateObject is a PUT with If-None-Match: *, which S3 and MinIO
// decide atomically across replicas.
package s3blob

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/blob"
)

// Defaults.
const (
	// DefaultPartSize is the multipart part size: S3's minimum is 5 MiB;
	// 16 MiB keeps the part count of a 256 MiB blob at 16.
	DefaultPartSize = 16 << 20
	// DefaultStagingTTL: staging objects and multipart uploads older than
	// this belong to a writer that died.
	DefaultStagingTTL = 24 * time.Hour
	// smallPut: content up to this size goes up in one PUT without the
	// multipart part buffer.
	smallPut = 1 << 20
)

// ErrBadURL: a --blob-store value that is not s3://bucket[/prefix].
var ErrBadURL = errors.New("want s3://bucket or s3://bucket/prefix")

// Options configure a Store.
type Options struct {
	// Bucket and Prefix place the store; see ParseURL.
	Bucket, Prefix string
	// Endpoint is the S3 service: "host:port" (HTTPS) or an http:// or
	// https:// URL; empty means AWS (s3.amazonaws.com).
	Endpoint string
	// Region; empty asks the service.
	Region string
	// PathStyle addresses buckets as endpoint/bucket rather than
	// bucket.endpoint: needed for MinIO and any endpoint without DNS names.
	PathStyle bool
	// Creds; nil reads the standard AWS variables (AWS_ACCESS_KEY_ID,
	// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), then the shared
	// credentials file (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials,
	// profile AWS_PROFILE), then the instance or pod role (IAM).
	Creds *credentials.Credentials
	// CreateBucket makes the bucket when missing (tests, first runs).
	CreateBucket bool

	MaxBlobSize   int64         // 0: blob.DefaultMaxSize
	TTL           time.Duration // 0 keeps blobs
	SweepInterval time.Duration // 0: TTL/4 within [1m, 1h]; negative: no janitor
	StagingTTL    time.Duration // 0: DefaultStagingTTL
	PartSize      int64         // 0: DefaultPartSize
	Logger        zerolog.Logger
	Now           func() time.Time
}

// ParseURL splits s3://bucket/prefix.
func ParseURL(raw string) (bucket, prefix string, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "s3" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", "", fmt.Errorf("blob store %q: %w", raw, ErrBadURL)
	}
	prefix = strings.Trim(u.Path, "/")
	if prefix != "" {
		if err := blob.ValidateKey(prefix); err != nil {
			return "", "", fmt.Errorf("blob store %q: prefix: %w", raw, err)
		}
	}
	return u.Host, prefix, nil
}

// DefaultCreds is the standard AWS credential chain (see Options.Creds).
func DefaultCreds() *credentials.Credentials {
	return credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{}, &credentials.FileAWSCredentials{}, &credentials.IAM{},
	})
}

// Store is the S3-compatible blob.Store.
type Store struct {
	opts Options
	c    *minio.Client
	log  zerolog.Logger
	root string // "<prefix>/" or ""

	mu      sync.Mutex
	leases  map[string]int      // guarded by mu: open Blobs by id
	pending map[string]struct{} // guarded by mu: ids whose Put runs here
	count   int                 // guarded by mu: blobs, as of the last sweep and writes since
	bytes   int64               // guarded by mu
	closed  bool                // guarded by mu

	closeOnce sync.Once
	stop      chan struct{}
	done      chan struct{}
}

// Open connects to the bucket (checking that it exists, or making it when
// told to) and starts the janitor.
func Open(ctx context.Context, opts Options) (*Store, error) {
	opts = withDefaults(opts)
	c, err := newClient(opts)
	if err != nil {
		return nil, err
	}
	s := &Store{opts: opts, c: c, log: opts.Logger, leases: map[string]int{}, pending: map[string]struct{}{},
		stop: make(chan struct{}), done: make(chan struct{})}
	if opts.Prefix != "" {
		s.root = opts.Prefix + "/"
	}
	if err := s.ensureBucket(ctx); err != nil {
		return nil, err
	}
	if _, err := s.Sweep(ctx); err != nil {
		s.log.Warn().Err(err).Msg("blob sweep at open")
	}
	if opts.SweepInterval > 0 {
		go blob.RunJanitor(s.stop, s.done, s.opts.SweepInterval, s.Sweep, s.log)
	} else {
		close(s.done)
	}
	return s, nil
}

func withDefaults(o Options) Options {
	if o.MaxBlobSize <= 0 {
		o.MaxBlobSize = blob.DefaultMaxSize
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = min(max(o.TTL/4, time.Minute), time.Hour)
	}
	if o.StagingTTL <= 0 {
		o.StagingTTL = DefaultStagingTTL
	}
	if o.PartSize <= 0 {
		o.PartSize = DefaultPartSize
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Creds == nil {
		o.Creds = DefaultCreds()
	}
	return o
}

func newClient(o Options) (*minio.Client, error) {
	host, secure, err := endpoint(o.Endpoint)
	if err != nil {
		return nil, err
	}
	lookup := minio.BucketLookupAuto
	if o.PathStyle {
		lookup = minio.BucketLookupPath
	}
	c, err := minio.New(host, &minio.Options{Creds: o.Creds, Secure: secure, Region: o.Region, BucketLookup: lookup})
	if err != nil {
		return nil, fmt.Errorf("s3 client: %w", err)
	}
	return c, nil
}

// endpoint turns Options.Endpoint into host[:port] and whether to use TLS.
func endpoint(e string) (host string, secure bool, err error) {
	switch {
	case e == "":
		return "s3.amazonaws.com", true, nil
	case strings.Contains(e, "://"):
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" {
			return "", false, fmt.Errorf("s3 endpoint %q: want host:port or http(s)://host:port", e)
		}
		return u.Host, u.Scheme == "https", nil
	}
	return e, true, nil
}

func (s *Store) ensureBucket(ctx context.Context) error {
	ok, err := s.c.BucketExists(ctx, s.opts.Bucket)
	if err != nil {
		return fmt.Errorf("s3 bucket %s: %w", s.opts.Bucket, err)
	}
	if ok {
		return nil
	}
	if !s.opts.CreateBucket {
		return fmt.Errorf("s3 bucket %s does not exist: create it first", s.opts.Bucket)
	}
	if err := s.c.MakeBucket(ctx, s.opts.Bucket, minio.MakeBucketOptions{Region: s.opts.Region}); err != nil {
		if code := minio.ToErrorResponse(err).Code; code != "BucketAlreadyOwnedByYou" && code != "BucketAlreadyExists" {
			return fmt.Errorf("s3 make bucket %s: %w", s.opts.Bucket, err)
		}
	}
	return nil
}

func (s *Store) blobKey(id string) string { return s.root + "blobs/" + strings.TrimPrefix(id, "blob:") }

func isNotFound(err error) bool {
	code := minio.ToErrorResponse(err).Code
	return code == minio.NoSuchKey || code == "NotFound" || code == minio.NoSuchBucket
}

// NewID implements blob.Store.
func (s *Store) NewID() string { return blob.NewID() }

// Objects implements blob.Store.
func (s *Store) Objects() blob.Objects { return objects{s} }

// Usage implements blob.Store: as of the last sweep, plus writes since.
func (s *Store) Usage() (int, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count, s.bytes
}

// OwnerUsage implements blob.Store; S3 keeps no per-owner tally (see the
// package doc), so it is always 0.
func (s *Store) OwnerUsage(string) int64 { return 0 }

// Close stops the janitor; open Blobs stay readable. Idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.stop)
		<-s.done
	})
	return nil
}

// MaxSize implements blob.Store.
func (s *Store) MaxSize() int64 { return s.opts.MaxBlobSize }
