package blob_test

import (
	"fmt"
	"testing"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/blob/blobtest"
)

// BenchmarkUploadChunk is the cost of one upload_chunk after n-1 chunks:
// "counted" reads the bytes received from the upload's metadata, "listed"
// lists the chunks (the way before it, still used for uploads begun by
// older gateways). Same run, same store:
//
//	go test ./blob -run '^$' -bench UploadChunk -benchtime 200x
func BenchmarkUploadChunk(b *testing.B) {
	for _, backend := range []string{"fs", "mem"} {
		for _, mode := range []string{"listed", "counted"} {
			for _, n := range []int{100, 1000} {
				b.Run(fmt.Sprintf("%s/%s/chunks=%d", backend, mode, n), func(b *testing.B) {
					blobtest.BenchUploadChunk(b, openBench(b, backend), mode == "listed", n)
				})
			}
		}
	}
}

func openBench(b *testing.B, backend string) blob.Store {
	if backend == "mem" {
		s := blob.NewMemStore(blob.MemOptions{})
		b.Cleanup(func() { _ = s.Close() })
		return s
	}
	s, err := blob.OpenFSStore(blob.FSOptions{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}
