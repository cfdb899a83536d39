package blobtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/blob"
)

// BenchUploadChunk measures one upload_chunk at the end of an upload of
// n chunks of 1 KiB on s. With listed, the upload's metadata is rewritten
// without its count of bytes received before every call, as an upload
// begun by a gateway that did not keep it: Chunk then lists the chunks
// stored so far, which is how every chunk was counted before (it then
// also rewrites the metadata, which the old code did not: "listed" is the
// old cost plus one small write). Between
// calls (off the clock) the chunk is removed again, so that every call
// finds n-1 chunks before it.
func BenchUploadChunk(b *testing.B, s blob.Store, listed bool, n int) {
	ctx := context.Background()
	u := blob.NewUploads(s, blob.UploadOptions{})
	piece := make([]byte, 1024)
	id, err := u.Begin(ctx, "alice", "application/octet-stream", int64(n*len(piece)))
	if err != nil {
		b.Fatal(err)
	}
	for i := range n - 1 {
		if _, err := u.Chunk(ctx, id, blob.PutOptions{Owner: "alice"}, int64(i*len(piece)), piece); err != nil {
			b.Fatal(err)
		}
	}
	obj := s.Objects()
	dir := "uploads/" + strings.TrimPrefix(id, "upload:") + "/"
	meta := readMeta(b, obj, dir+"meta")
	if listed {
		delete(meta, "received")
	}
	rawMeta, _ := json.Marshal(meta)
	last := int64((n - 1) * len(piece))
	lastKey := fmt.Sprintf("%sc-%020d", dir, last)
	reset := func() {
		if err := obj.DeleteObject(ctx, lastKey); err != nil {
			b.Fatal(err)
		}
		if err := obj.PutObject(ctx, dir+"meta", bytes.NewReader(rawMeta)); err != nil {
			b.Fatal(err)
		}
	}
	reset()
	b.SetBytes(int64(len(piece)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := u.Chunk(ctx, id, blob.PutOptions{Owner: "alice"}, last, piece); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		reset()
		b.StartTimer()
	}
}

func readMeta(b *testing.B, obj blob.Objects, key string) map[string]any {
	rc, _, err := obj.GetObject(context.Background(), key)
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		b.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		b.Fatal(err)
	}
	if _, ok := m["received"]; !ok {
		b.Fatal("upload metadata without its count of bytes received")
	}
	return m
}
