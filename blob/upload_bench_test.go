package blob

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkUploadChunk is the cost of one upload_chunk at the end of an
// upload of n chunks: "counted" keeps the bytes received in the upload's
// metadata, "listed" lists the chunks stored so far on every call (what
// an upload begun by an older gateway does). Same run, same store.
func BenchmarkUploadChunk(b *testing.B) {
	for _, backend := range []string{"fs", "mem"} {
		for _, mode := range []string{"listed", "counted"} {
			for _, n := range []int{100, 1000} {
				b.Run(fmt.Sprintf("%s/%s/chunks=%d", backend, mode, n), func(b *testing.B) {
					benchUploadChunks(b, openBench(b, backend), mode == "listed", n)
				})
			}
		}
	}
}

func openBench(b *testing.B, backend string) Store {
	if backend == "mem" {
		s := NewMemStore(MemOptions{})
		b.Cleanup(func() { _ = s.Close() })
		return s
	}
	s, err := OpenFSStore(FSOptions{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// benchUploadChunks fills an upload with n-1 chunks, then measures the
// n-th, undoing it between iterations so that every one sees n-1 before.
func benchUploadChunks(b *testing.B, s Store, listed bool, n int) {
	ctx := context.Background()
	u := NewUploads(s, UploadOptions{})
	u.listChunks = listed
	piece := make([]byte, 1024)
	id, err := u.Begin(ctx, "alice", "application/octet-stream", int64(n*len(piece)))
	if err != nil {
		b.Fatal(err)
	}
	for i := range n - 1 {
		if _, err := u.Chunk(ctx, "alice", id, int64(i*len(piece)), piece); err != nil {
			b.Fatal(err)
		}
	}
	last := int64((n - 1) * len(piece))
	m, err := u.meta(ctx, "alice", id)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(piece)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := u.Chunk(ctx, "alice", id, last, piece); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := u.obj.DeleteObject(ctx, u.key(id, chunkName(last))); err != nil {
			b.Fatal(err)
		}
		if err := u.putMeta(ctx, id, m); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
