package blob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock is a settable clock for TTL tests.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type storeFactory func(t *testing.T, maxSize int64, ttl time.Duration, clock *fakeClock) Store

var storeFactories = map[string]storeFactory{
	"mem": func(_ *testing.T, maxSize int64, ttl time.Duration, clock *fakeClock) Store {
		return NewMemStore(MemOptions{MaxBlobSize: maxSize, TTL: ttl, Now: clock.Now})
	},
	"fs": func(t *testing.T, maxSize int64, ttl time.Duration, clock *fakeClock) Store {
		s, err := OpenFSStore(FSOptions{Dir: t.TempDir(), MaxBlobSize: maxSize, TTL: ttl, Now: clock.Now, SweepInterval: time.Hour})
		require.NoError(t, err)
		return s
	},
}

func forEachStore(t *testing.T, maxSize int64, ttl time.Duration, fn func(t *testing.T, s Store, clock *fakeClock)) {
	for name, mk := range storeFactories {
		t.Run(name, func(t *testing.T) {
			clock := newFakeClock()
			s := mk(t, maxSize, ttl, clock)
			defer func() { require.NoError(t, s.Close()) }()
			fn(t, s, clock)
		})
	}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func readAll(t *testing.T, s Store, id string) []byte {
	t.Helper()
	b, err := s.Open(context.Background(), id)
	require.NoError(t, err)
	defer b.Close()
	data, err := io.ReadAll(io.NewSectionReader(b, 0, b.Info().Size))
	require.NoError(t, err)
	return data
}

func TestBlobPutStatOpen(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, 1<<20, 0, func(t *testing.T, s Store, clock *fakeClock) {
		content := []byte("name,email\nAda,ada@example.com\n")
		id := s.NewID()
		info, err := s.Put(ctx, id, PutOptions{Kind: "Text/CSV"}, bytes.NewReader(content))
		require.NoError(t, err)
		assert.Equal(t, Info{ID: id, Kind: "text/csv", Size: int64(len(content)), SHA256: sha(content), Created: clock.Now()}, info)

		got, err := s.Stat(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, info, got)
		assert.Equal(t, content, readAll(t, s, id))

		b, err := s.Open(ctx, id)
		require.NoError(t, err)
		p := make([]byte, 10)
		n, err := b.ReadAt(p, int64(len(content))-4)
		assert.Equal(t, 4, n)
		assert.ErrorIs(t, err, io.EOF, "reads stop at the blob's end, never in the file's header")
		require.NoError(t, b.Close())
		require.NoError(t, b.Close(), "Close is idempotent")

		count, total := s.Usage()
		assert.Equal(t, 1, count)
		assert.Equal(t, int64(len(content)), total)

		_, err = s.Put(ctx, id, PutOptions{Kind: "text/plain"}, strings.NewReader("again"))
		assert.ErrorIs(t, err, ErrExists)
		assert.Equal(t, content, readAll(t, s, id), "a refused Put leaves the blob alone")

		empty := s.NewID()
		info, err = s.Put(ctx, empty, PutOptions{Kind: "application/octet-stream"}, strings.NewReader(""))
		require.NoError(t, err)
		assert.Equal(t, int64(0), info.Size)
		assert.Empty(t, readAll(t, s, empty))
	})
}

func TestBlobBadIDs(t *testing.T) {
	ctx := context.Background()
	bad := []string{
		"", "blob:", "blob", "3f9c0000000000000000000000000000",
		"blob:../../../../etc/passwd", "blob:0123456789abcdef0123456789abcde",
		"blob:0123456789abcdef0123456789abcdef0", "blob:0123456789ABCDEF0123456789ABCDEF",
		"blob:0123456789abcdef0123456789abcdeg", "blob:0123456789abcdef/123456789abcdef",
		"blob:0123456789abcdef\x00123456789abcdef", "BLOB:0123456789abcdef0123456789abcdef",
		" blob:0123456789abcdef0123456789abcdef", "blob:sheet-123",
	}
	forEachStore(t, 1<<20, 0, func(t *testing.T, s Store, _ *fakeClock) {
		for _, id := range bad {
			_, err := s.Put(ctx, id, PutOptions{Kind: "text/plain"}, strings.NewReader("x"))
			assert.ErrorIs(t, err, ErrInvalidID, "Put %q", id)
			_, err = s.Stat(ctx, id)
			assert.Error(t, err, "Stat %q", id)
			_, err = s.Open(ctx, id)
			assert.Error(t, err, "Open %q", id)
		}
		_, err := s.Stat(ctx, s.NewID())
		assert.ErrorIs(t, err, ErrNotFound)
		_, err = s.Open(ctx, s.NewID())
		assert.ErrorIs(t, err, ErrNotFound)
		count, _ := s.Usage()
		assert.Zero(t, count)
	})
}

func TestBlobKinds(t *testing.T) {
	ok := map[string]string{
		"text/plain":                "text/plain",
		"TEXT/Plain":                "text/plain",
		"text/plain; charset=utf-8": "text/plain; charset=utf-8",
		"application/vnd.api+json":  "application/vnd.api+json",
		"application/pdf":           "application/pdf",
	}
	for in, want := range ok {
		got, err := NormalizeKind(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got)
	}
	for _, in := range []string{"", "text", "text/", "/plain", "text/plain/x", "te xt/plain", "text/pl ain",
		"-text/plain", strings.Repeat("a", 64) + "/" + strings.Repeat("b", 63), "text/plain; charset", "ünï/code"} {
		_, err := NormalizeKind(in)
		assert.ErrorIs(t, err, ErrInvalidKind, "%q", in)
	}
	forEachStore(t, 1<<20, 0, func(t *testing.T, s Store, _ *fakeClock) {
		_, err := s.Put(context.Background(), s.NewID(), PutOptions{Kind: "not a mime"}, strings.NewReader("x"))
		assert.ErrorIs(t, err, ErrInvalidKind)
	})

	text := []string{"text/plain", "text/csv", "application/json", "application/ld+json", "image/svg+xml", "application/xml", "text/markdown; charset=utf-8"}
	for _, k := range text {
		assert.True(t, IsTextKind(k), k)
	}
	for _, k := range []string{"application/pdf", "image/png", "application/octet-stream", "garbage"} {
		assert.False(t, IsTextKind(k), k)
	}
}

func TestBlobSizeLimit(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, 100, 0, func(t *testing.T, s Store, _ *fakeClock) {
		id := s.NewID()
		_, err := s.Put(ctx, id, PutOptions{Kind: "text/plain"}, bytes.NewReader(make([]byte, 101)))
		require.ErrorIs(t, err, ErrTooLarge)
		_, err = s.Stat(ctx, id)
		assert.ErrorIs(t, err, ErrNotFound, "nothing kept")
		count, total := s.Usage()
		assert.Zero(t, count)
		assert.Zero(t, total)

		info, err := s.Put(ctx, id, PutOptions{Kind: "text/plain"}, bytes.NewReader(make([]byte, 100)))
		require.NoError(t, err, "exactly the limit fits, and the id is free again")
		assert.Equal(t, int64(100), info.Size)
	})
}

// failingReader yields n bytes, then fails.
type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, errors.New("connection reset")
	}
	k := min(len(p), r.n)
	r.n -= k
	return k, nil
}

func TestBlobAbortedPut(t *testing.T) {
	forEachStore(t, 1<<20, 0, func(t *testing.T, s Store, _ *fakeClock) {
		id := s.NewID()
		_, err := s.Put(context.Background(), id, PutOptions{Kind: "text/plain"}, &failingReader{n: 5000})
		require.Error(t, err)
		_, err = s.Stat(context.Background(), id)
		assert.ErrorIs(t, err, ErrNotFound)

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = s.Put(ctx, s.NewID(), PutOptions{Kind: "text/plain"}, strings.NewReader("late"))
		assert.ErrorIs(t, err, context.Canceled)
		count, _ := s.Usage()
		assert.Zero(t, count)
		if fs, ok := s.(*FSStore); ok {
			assert.Empty(t, tempFiles(t, fs), "no temp file left behind")
		}
	})
}

func TestBlobTTLAndLeases(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, 1<<20, time.Hour, func(t *testing.T, s Store, clock *fakeClock) {
		held, free, young := s.NewID(), s.NewID(), ""
		for _, id := range []string{held, free} {
			_, err := s.Put(ctx, id, PutOptions{Kind: "text/plain"}, strings.NewReader("data of "+id))
			require.NoError(t, err)
		}
		clock.Advance(30 * time.Minute)
		young = s.NewID()
		_, err := s.Put(ctx, young, PutOptions{Kind: "text/plain"}, strings.NewReader("young"))
		require.NoError(t, err)

		n, err := s.Sweep(ctx)
		require.NoError(t, err)
		assert.Zero(t, n, "nothing is old enough yet")

		b, err := s.Open(ctx, held)
		require.NoError(t, err)
		clock.Advance(31 * time.Minute)
		n, err = s.Sweep(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, n, "only the expired blob without a lease goes")
		_, err = s.Stat(ctx, free)
		assert.ErrorIs(t, err, ErrNotFound)
		_, err = s.Stat(ctx, young)
		assert.NoError(t, err)

		data := make([]byte, b.Info().Size)
		_, err = b.ReadAt(data, 0)
		require.NoError(t, err, "a leased blob stays readable past its TTL")
		assert.Equal(t, "data of "+held, string(data))
		require.NoError(t, b.Close())

		n, err = s.Sweep(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, n, "released, it expires at the next sweep")
		_, err = s.Open(ctx, held)
		assert.ErrorIs(t, err, ErrNotFound)
		count, total := s.Usage()
		assert.Equal(t, 1, count)
		assert.Equal(t, int64(len("young")), total)
	})
}

func TestBlobNoTTLKeepsForever(t *testing.T) {
	forEachStore(t, 1<<20, 0, func(t *testing.T, s Store, clock *fakeClock) {
		id := s.NewID()
		_, err := s.Put(context.Background(), id, PutOptions{Kind: "text/plain"}, strings.NewReader("x"))
		require.NoError(t, err)
		clock.Advance(10 * 365 * 24 * time.Hour)
		n, err := s.Sweep(context.Background())
		require.NoError(t, err)
		assert.Zero(t, n)
	})
}

func TestBlobConcurrentOpenAndSweep(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, 1<<20, time.Minute, func(t *testing.T, s Store, clock *fakeClock) {
		ids := make([]string, 50)
		var wg sync.WaitGroup
		for i := range ids {
			ids[i] = s.NewID()
			wg.Go(func() {
				_, err := s.Put(ctx, ids[i], PutOptions{Kind: "text/plain"}, strings.NewReader(ids[i]))
				assert.NoError(t, err)
			})
		}
		wg.Wait()
		count, _ := s.Usage()
		require.Equal(t, len(ids), count)
		clock.Advance(time.Hour)
		for _, id := range ids {
			wg.Go(func() {
				b, err := s.Open(ctx, id)
				if err != nil {
					assert.ErrorIs(t, err, ErrNotFound)
					return
				}
				defer b.Close()
				data := make([]byte, b.Info().Size)
				_, err = b.ReadAt(data, 0)
				assert.NoError(t, err, "an open blob is never swept under the reader")
				assert.Equal(t, id, string(data))
			})
		}
		wg.Go(func() {
			for range 20 {
				_, err := s.Sweep(ctx)
				assert.NoError(t, err)
			}
		})
		wg.Wait()
		_, err := s.Sweep(ctx)
		require.NoError(t, err)
		count, _ = s.Usage()
		assert.Zero(t, count)
	})
}

func TestReadSample(t *testing.T) {
	s := NewMemStore(MemOptions{})
	ctx := context.Background()
	put := func(kind, content string) Blob {
		id := s.NewID()
		_, err := s.Put(ctx, id, PutOptions{Kind: kind}, strings.NewReader(content))
		require.NoError(t, err)
		b, err := s.Open(ctx, id)
		require.NoError(t, err)
		t.Cleanup(func() { b.Close() })
		return b
	}
	ascii := put("text/plain", "0123456789")
	tests := []struct {
		name      string
		b         Blob
		mode      SampleMode
		max       int64
		want      string
		truncated bool
		err       error
	}{
		{"head", ascii, SampleHead, 4, "0123", true, nil},
		{"tail", ascii, SampleTail, 4, "6789", true, nil},
		{"head all", ascii, SampleHead, 100, "0123456789", false, nil},
		{"full", ascii, SampleFull, 10, "0123456789", false, nil},
		{"full too large", ascii, SampleFull, 9, "", false, ErrFullReadTooLarge},
		{"zero budget", ascii, SampleHead, 0, "", false, ErrInvalidSample},
		{"bad mode", ascii, "middle", 5, "", false, ErrInvalidSample},
		// "é" is 2 bytes, "€" 3: cuts inside them are trimmed for text.
		{"utf8 head", put("text/plain", "aé€b"), SampleHead, 4, "aé", true, nil},
		{"utf8 tail", put("text/plain", "aé€b"), SampleTail, 5, "€b", true, nil},
		{"binary head untouched", put("application/octet-stream", "aé€b"), SampleHead, 4, "aé\xe2", true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, truncated, err := ReadSample(tc.b, tc.mode, tc.max)
			if tc.err != nil {
				assert.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(data))
			assert.Equal(t, tc.truncated, truncated)
		})
	}
	require.NoError(t, s.Close())
	_, err := s.Put(ctx, s.NewID(), PutOptions{Kind: "text/plain"}, strings.NewReader("x"))
	assert.ErrorIs(t, err, ErrStoreClosed)
}

func FuzzValidateID(f *testing.F) {
	for _, s := range []string{NewID(), "blob:", "blob:../x", "blob:0123456789abcdef0123456789abcdef", "blob:0123456789abcdef0123456789abcdeF"} {
		f.Add(s)
	}
	dir := "/data/objects"
	f.Fuzz(func(t *testing.T, id string) {
		if ValidateID(id) != nil {
			return
		}
		s := &FSStore{objects: dir}
		shard, file := s.path(id)
		if !strings.HasPrefix(file, shard+"/") || !strings.HasPrefix(shard, dir+"/") || strings.Contains(file, "..") {
			t.Fatalf("id %q maps outside the store: %s", id, file)
		}
		if len(file) != len(dir)+1+2+1+idHexLen {
			t.Fatalf("id %q maps to unexpected %s", id, file)
		}
	})
}

// TestKindAndKeyCharacterBounds: a kind of exactly 127 characters passes
// and one of 128 fails; each end of a name's character ranges passes
// where the character just outside fails; characters a MIME token allows
// but an RFC 6838 restricted-name does not are refused after the first.
func TestKindAndKeyCharacterBounds(t *testing.T) {
	exact := "application/" + strings.Repeat("x", 127-len("application/"))
	got, err := NormalizeKind(exact)
	require.NoError(t, err)
	assert.Equal(t, exact, got)
	_, err = NormalizeKind(exact + "x")
	assert.ErrorIs(t, err, ErrInvalidKind)

	for _, in := range []string{"application/zip", "application/a0", "application/x9", "application/0a", "application/9a"} {
		_, err := NormalizeKind(in)
		assert.NoError(t, err, in)
	}
	for _, in := range []string{"text/a*b", "text/a~b", "text/a%b", "text/a'b", "text/a|b"} {
		_, err := NormalizeKind(in)
		assert.ErrorIs(t, err, ErrInvalidKind, in)
	}

	for _, key := range []string{"a", "z", "A", "Z", "0", "9", "a_b-c.d"} {
		assert.NoError(t, ValidateKey("runs/"+key), key)
	}
	for _, key := range []string{"`", "{", "@", "[", ":", "~"} {
		assert.ErrorIs(t, ValidateKey("runs/x"+key), ErrInvalidKey, key)
	}
}
