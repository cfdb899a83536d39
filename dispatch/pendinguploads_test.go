package dispatch

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/transport"
)

func chunkParams(id string, off int, data string) string {
	return fmt.Sprintf(`{"upload_id":%q,"offset":%d,"content":%q}`, id, off, base64.StdEncoding.EncodeToString([]byte(data)))
}

// The chunks of an unfinished upload count against the identity's quota
// when they arrive: bob (100 bytes) cannot park more than that in an
// upload he never finishes, and his other blobs see those bytes taken.
func TestUploadChunksCountAgainstTheQuota(t *testing.T) {
	e, _ := newOwnersEnv(t, completed(`{}`))
	bob := e.as(tokenBob)[1]
	var begin BeginUploadResult
	mustCall(t, bob, "begin_upload", `{"kind":"text/plain","size_bytes":300}`, &begin)
	var got UploadChunkResult
	mustCall(t, bob, "upload_chunk", chunkParams(begin.UploadID, 0, strings.Repeat("a", 60)), &got)
	_, err := bob.call("upload_chunk", chunkParams(begin.UploadID, 60, strings.Repeat("b", 60)))
	require.NotNil(t, err, "the second chunk passes bob's 100 bytes")
	assert.Equal(t, StringStorageFull, err.EffectiveCode())
	assert.Contains(t, err.Details, "this identity's blobs and unfinished uploads hold 60 of its 100 bytes (60 of them in unfinished uploads); this chunk needs 60 more")
	require.NotNil(t, err.Retry)
	_, err = bob.call("create_blob", `{"content":"`+strings.Repeat("x", 50)+`"}`)
	require.NotNil(t, err, "the pending chunk takes its part of the quota")
	assert.Equal(t, StringStorageFull, err.EffectiveCode())
	mustCall(t, bob, "upload_chunk", chunkParams(begin.UploadID, 60, strings.Repeat("b", 40)), &got)
	assert.Equal(t, int64(100), got.ReceivedBytes, "what fits is taken")
}

// An identity may have blob.DefaultMaxPendingUploads unfinished uploads.
func TestPendingUploadsAreCapped(t *testing.T) {
	e, _ := newOwnersEnv(t, completed(`{}`))
	alice, bob := e.as(tokenAlice)[1], e.as(tokenBob)[1]
	var begin BeginUploadResult
	for range 16 {
		mustCall(t, alice, "begin_upload", `{"kind":"text/plain","size_bytes":1}`, &begin)
	}
	_, err := alice.call("begin_upload", `{"kind":"text/plain","size_bytes":1}`)
	require.NotNil(t, err)
	assert.Equal(t, StringStorageFull, err.EffectiveCode())
	assert.Contains(t, err.Details, "this identity has 16 unfinished uploads, the most it may have at once")
	mustCall(t, bob, "begin_upload", `{"kind":"text/plain","size_bytes":1}`, &begin)
}

// Concurrent finish_upload calls of one upload make one blob; the others
// are told the upload is being finished or gone.
func TestConcurrentFinishUploadMakesOneBlob(t *testing.T) {
	e, _ := newOwnersEnv(t, completed(`{}`))
	alice := e.as(tokenAlice)[1]
	data := strings.Repeat("finish me ", 20_000)
	var begin BeginUploadResult
	mustCall(t, alice, "begin_upload", fmt.Sprintf(`{"kind":"text/plain","size_bytes":%d}`, len(data)), &begin)
	for off := 0; off < len(data); off += int(begin.MaxChunkBytes) {
		var got UploadChunkResult
		mustCall(t, alice, "upload_chunk", chunkParams(begin.UploadID, off, data[off:min(off+int(begin.MaxChunkBytes), len(data))]), &got)
	}
	const finishes = 6
	start := make(chan struct{})
	var wg sync.WaitGroup
	var made atomic.Int32
	errs := make([]*transport.Error, finishes)
	for i := range finishes {
		c := e.httpFront("Bearer " + tokenAlice)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			var res json.RawMessage
			res, errs[i] = c.call("finish_upload", fmt.Sprintf(`{"upload_id":%q,"sha256":%q}`, begin.UploadID, hexSum([]byte(data))))
			if errs[i] == nil && res != nil {
				made.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	assert.Equal(t, int32(1), made.Load(), "one blob is made: %v", errs)
	for _, err := range errs {
		if err != nil {
			assert.Contains(t, []string{StringUploadNotFound, transport.StringInvalidParams}, err.EffectiveCode(), "%v", err)
			assert.Regexp(t, "being finished by another call|gone once finished", err.Details)
		}
	}
	count, _ := e.blobs.Usage()
	assert.Equal(t, 1, count)
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// A run's blob is checked against the identity's quota by its size,
// before the sandbox's file is read: a blob that cannot fit costs no read.
func TestRunOutputQuotaCheckedBeforeReading(t *testing.T) {
	file := &countingReader{r: strings.NewReader(strings.Repeat("z", 1000))}
	e, _ := newOwnersEnv(t, func(job sandbox.Job) (*sandbox.Result, error) {
		b := sandbox.OutputBlob{ID: job.OutputBlobIDs[0], Kind: "text/plain", Size: 1000}
		if err := job.Outputs.Output(b, file); err != nil {
			return &sandbox.Result{Status: sandbox.StatusFailed, Error: &sandbox.RunError{Type: "BlobError", Message: err.Error()}}, nil
		}
		return &sandbox.Result{Status: sandbox.StatusCompleted, Output: json.RawMessage(`{}`), OutputBlobs: []sandbox.OutputBlob{b}}, nil
	})
	bob := e.as(tokenBob)[1]
	_, err := bob.call("run_code", `{"language":"python","code":"x"}`)
	require.NotNil(t, err)
	assert.Equal(t, StringStorageFull, err.EffectiveCode())
	assert.Contains(t, err.Details, "this identity's blobs hold 0 of its 100 bytes; this blob needs 1000 more")
	assert.Zero(t, file.n.Load(), "nothing of the blob was read")
	count, _ := e.blobs.Usage()
	assert.Zero(t, count)

	alice := e.as(tokenAlice)[1]
	res, err := alice.call("run_code", `{"language":"python","code":"x"}`)
	require.Nil(t, err, "%v", err)
	var run RunResult
	require.NoError(t, json.Unmarshal(res, &run))
	require.Len(t, run.OutputBlobs, 1, "%+v", run)
	assert.Equal(t, int64(1000), file.n.Load(), "alice, without a quota, gets the blob streamed into the store")
}
