package s3blob_test

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/blob/blobtest"
	"github.com/skillgate/skillgate/blob/s3blob"
	"github.com/skillgate/skillgate/internal/scaleouttest"
)

// BenchmarkBlobThroughput writes and reads 1 MiB and 64 MiB blobs on the
// filesystem store, the S3 store on a local MinIO, and the S3 client alone
// against the same MinIO (the ceiling the S3 store can reach), in one run.
// The stores are given the digest up front, as create_blob and
// finish_upload give it; s3-staged is a Put without it (stage, then
// server-side copy):
//
//	go test ./blob/s3blob -run '^$' -bench BlobThroughput -benchtime 10x
func BenchmarkBlobThroughput(b *testing.B) {
	m := scaleouttest.StartMinIO(b)
	ctx := context.Background()
	s3, err := s3blob.Open(ctx, s3blob.Options{Bucket: "bench", Prefix: "b", Endpoint: m.Endpoint, Region: "us-east-1",
		PathStyle: true, CreateBucket: true, MaxBlobSize: 128 << 20, SweepInterval: -1})
	require.NoError(b, err)
	b.Cleanup(func() { _ = s3.Close() })
	fs, err := blob.OpenFSStore(blob.FSOptions{Dir: b.TempDir(), MaxBlobSize: 128 << 20})
	require.NoError(b, err)
	b.Cleanup(func() { _ = fs.Close() })
	raw, err := minio.New(m.Endpoint[len("http://"):], &minio.Options{
		Creds: credentials.NewStaticV4(scaleouttest.AccessKey, scaleouttest.SecretKey, ""), Region: "us-east-1",
		BucketLookup: minio.BucketLookupPath})
	require.NoError(b, err)

	for _, size := range []int{1 << 20, 64 << 20} {
		data := bytes.Repeat([]byte("0123456789abcdef"), size/16)
		name := strconv.Itoa(size>>20) + "MiB"
		sum := blobtest.Sum(data)
		for _, st := range []struct {
			name   string
			store  blob.Store
			digest string
		}{{"fs", fs, sum}, {"s3", s3, sum}, {"s3-staged", s3, ""}} {
			var ids []string
			b.Run(st.name+"/write/"+name, func(b *testing.B) {
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					info, err := st.store.Put(ctx, st.store.NewID(), blob.PutOptions{Kind: "application/octet-stream", SHA256: st.digest}, bytes.NewReader(data))
					require.NoError(b, err)
					ids = append(ids, info.ID)
				}
			})
			b.Run(st.name+"/read/"+name, func(b *testing.B) {
				b.SetBytes(int64(size))
				b.ReportAllocs()
				buf := make([]byte, size)
				for i := 0; b.Loop(); i++ {
					o, err := st.store.Open(ctx, ids[i%len(ids)])
					require.NoError(b, err)
					_, err = o.ReadAt(buf, 0)
					require.NoError(b, err)
					_ = o.Close()
				}
			})
		}
		b.Run("minio-client/write/"+name, func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				_, err := raw.PutObject(ctx, "bench", "raw/"+name+"/"+strconv.Itoa(i), bytes.NewReader(data), int64(size),
					minio.PutObjectOptions{PartSize: s3blob.DefaultPartSize})
				require.NoError(b, err)
			}
		})
		b.Run("minio-client/read/"+name, func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			buf := make([]byte, size)
			for b.Loop() {
				o, err := raw.GetObject(ctx, "bench", "raw/"+name+"/0", minio.GetObjectOptions{})
				require.NoError(b, err)
				_, err = io.ReadFull(o, buf)
				require.NoError(b, err)
				_ = o.Close()
			}
		})
	}
}

// BenchmarkUploadChunk is blob's BenchmarkUploadChunk on MinIO: one
// upload_chunk after n-1 chunks, counted from the upload's metadata or by
// listing the chunks, same run:
//
//	go test ./blob/s3blob -run '^$' -bench UploadChunk -benchtime 50x
func BenchmarkUploadChunk(b *testing.B) {
	m := scaleouttest.StartMinIO(b)
	for _, mode := range []string{"listed", "counted"} {
		for _, n := range []int{100, 1000} {
			b.Run(mode+"/chunks="+strconv.Itoa(n), func(b *testing.B) {
				s, err := s3blob.Open(context.Background(), s3blob.Options{Bucket: "bench", Prefix: "chunks-" + mode + strconv.Itoa(n),
					Endpoint: m.Endpoint, Region: "us-east-1", PathStyle: true, CreateBucket: true, SweepInterval: -1})
				require.NoError(b, err)
				b.Cleanup(func() { _ = s.Close() })
				blobtest.BenchUploadChunk(b, s, mode == "listed", n)
			})
		}
	}
}
