// Package blobtest is the conformance suite every blob.Store backend runs:
// the same tests, against the real backend, so that the filesystem, memory
// and S3-compatible stores keep one contract (ids, kinds, limits, all or
// nothing writes, TTL sweeps and leases, range reads, owners, the Objects
// space and chunked uploads on top of it).
//
// A backend's test calls
//
//	blobtest.Run(t, func(t *testing.T, ns string, cfg blobtest.Config) blob.Store { ... }, opts)
//
// The constructor opens a store over the namespace ns (a folder, a bucket
// prefix); stores opened with the same ns share their data, as replicas
// do. The constructor registers the store's Close with t.Cleanup.
package blobtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/blob"
)

// Config is what the suite asks of a store.
type Config struct {
	// MaxSize is the largest blob the store takes.
	MaxSize int64
	// TTL of blobs; 0 keeps them.
	TTL time.Duration
	// Now is the store's clock. It starts at the real time, so a backend
	// that dates objects by its own clock (S3's Last-Modified) agrees.
	Now func() time.Time
}

// Open opens a store over namespace ns with cfg.
type Open func(t *testing.T, ns string, cfg Config) blob.Store

// Options say what the backend supports beyond the common contract.
type Options struct {
	// Replicas: two stores may be open on one namespace at once and see
	// each other's blobs, objects and uploads.
	Replicas bool
}

// Clock is a settable clock starting at the real time.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock at the current time.
func NewClock() *Clock { return &Clock{now: time.Now().UTC()} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// suite carries one Run's backend.
type suite struct {
	open Open
	opts Options
	n    int
	mu   sync.Mutex
}

// ns returns a fresh namespace name.
func (s *suite) ns() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return "ns" + strconv.Itoa(s.n)
}

// store opens a store over a fresh namespace with a settable clock.
func (s *suite) store(t *testing.T, maxSize int64, ttl time.Duration) (blob.Store, *Clock, string) {
	clock := NewClock()
	ns := s.ns()
	return s.open(t, ns, Config{MaxSize: maxSize, TTL: ttl, Now: clock.Now}), clock, ns
}

// Run runs the conformance suite against a backend.
func Run(t *testing.T, open Open, opts Options) {
	s := &suite{open: open, opts: opts}
	t.Run("PutStatOpen", s.testPutStatOpen)
	t.Run("EmptyBlob", s.testEmpty)
	t.Run("BadIDs", s.testBadIDs)
	t.Run("Kinds", s.testKinds)
	t.Run("SizeLimit", s.testSizeLimit)
	t.Run("AbortedPut", s.testAbortedPut)
	t.Run("Exists", s.testExists)
	t.Run("ExpectedSum", s.testExpectedSum)
	t.Run("TTLAndLeases", s.testTTL)
	t.Run("Remove", s.testRemove)
	t.Run("Owners", s.testOwners)
	t.Run("Concurrent", s.testConcurrent)
	t.Run("LargeStreamed", s.testLarge)
	t.Run("Objects", s.testObjects)
	t.Run("ObjectKeys", s.testObjectKeys)
	t.Run("CreateObject", s.testCreateObject)
	t.Run("Uploads", s.testUploads)
	t.Run("UploadRefusals", s.testUploadRefusals)
	t.Run("UploadSweep", s.testUploadSweep)
	t.Run("UploadFinishOnce", s.testUploadFinishOnce)
	t.Run("UploadClaimTakeover", s.testUploadClaimTakeover)
	t.Run("UploadChunkRace", s.testUploadChunkRace)
	t.Run("PendingUploadsCap", s.testPendingUploadsCap)
	if opts.Replicas {
		t.Run("Replicas", s.testReplicas)
	}
}

// Sum is the lowercase hex SHA-256 of b.
func Sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func put(t *testing.T, s blob.Store, owner, kind string, data []byte) blob.Info {
	t.Helper()
	info, err := s.Put(context.Background(), s.NewID(), blob.PutOptions{Kind: kind, Owner: owner}, bytes.NewReader(data))
	require.NoError(t, err)
	return info
}

func readAll(t *testing.T, s blob.Store, id string) []byte {
	t.Helper()
	b, err := s.Open(context.Background(), id)
	require.NoError(t, err)
	defer b.Close()
	data, err := io.ReadAll(io.NewSectionReader(b, 0, b.Info().Size))
	require.NoError(t, err)
	return data
}
