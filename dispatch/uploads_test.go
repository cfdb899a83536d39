package dispatch

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/transport"
)

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func mustCall(t *testing.T, c caller, method, params string, out any) {
	t.Helper()
	res, err := c.call(method, params)
	require.Nil(t, err, "%s %s %s: %v", c.name(), method, params, err)
	require.NoError(t, json.Unmarshal(res, out))
}

// uploadBlob uploads data in chunks of chunk bytes and returns the result.
func uploadBlob(t *testing.T, c caller, kind string, data []byte, chunk int) CreateBlobResult {
	t.Helper()
	var begin BeginUploadResult
	mustCall(t, c, "BeginUpload", fmt.Sprintf(`{"kind":%q,"size_bytes":%d}`, kind, len(data)), &begin)
	require.Positive(t, begin.MaxChunkBytes)
	require.LessOrEqual(t, int64(chunk), begin.MaxChunkBytes)
	for off := 0; off < len(data); off += chunk {
		piece := data[off:min(off+chunk, len(data))]
		var got UploadChunkResult
		mustCall(t, c, "upload_chunk", fmt.Sprintf(`{"upload_id":%q,"offset":%d,"content":%q}`,
			begin.UploadID, off, base64.StdEncoding.EncodeToString(piece)), &got)
		assert.Equal(t, int64(off+len(piece)), got.ReceivedBytes)
	}
	var res CreateBlobResult
	mustCall(t, c, "finish_upload", fmt.Sprintf(`{"upload_id":%q,"sha256":%q}`, begin.UploadID, hexSum(data)), &res)
	return res
}

// readRanges reads a blob piece by piece with mode "range" and joins it.
func readRanges(t *testing.T, c caller, id string, maxBytes int) ([]byte, string, int) {
	t.Helper()
	var out []byte
	var b64 strings.Builder
	pieces := 0
	for off := int64(0); ; pieces++ {
		require.Less(t, pieces, 10000, "range reads must end")
		var r ReadBlobRangeResult
		mustCall(t, c, "read_blob", fmt.Sprintf(`{"blob_id":%q,"mode":"range","offset":%d,"max_bytes":%d}`, id, off, maxBytes), &r)
		assert.Equal(t, off, r.Offset)
		piece := []byte(r.Content)
		if r.Encoding == EncodingBase64 {
			var err error
			piece, err = base64.StdEncoding.DecodeString(r.Content)
			require.NoError(t, err)
			b64.WriteString(r.Content)
		}
		out = append(out, piece...)
		if r.NextOffset == nil {
			assert.False(t, r.Truncated)
			return out, b64.String(), pieces + 1
		}
		require.Equal(t, off+int64(len(piece)), *r.NextOffset)
		off = *r.NextOffset
	}
}

func TestUploadAndRangeRead(t *testing.T) {
	e := newEnv(t, examplesDir())
	data := make([]byte, 100_000)
	for i := range data {
		data[i] = byte(i * 31 % 256)
	}
	for _, c := range e.fronts() {
		res := uploadBlob(t, c, "application/octet-stream", data, 16<<10)
		assert.Equal(t, int64(len(data)), res.SizeBytes)
		assert.Equal(t, hexSum(data), res.SHA256)
		got, b64, pieces := readRanges(t, c, res.BlobID, 10_000)
		assert.Equal(t, data, got, "%s: the pieces join into the blob", c.name())
		assert.Equal(t, base64.StdEncoding.EncodeToString(data), b64, "%s: base64 pieces join too", c.name())
		assert.GreaterOrEqual(t, pieces, 10)
		got, _, _ = readRanges(t, c, res.BlobID, 1_000_000)
		assert.Equal(t, data, got, "%s: max_bytes past one response is cut to fit", c.name())
	}
}

func TestRangeReadText(t *testing.T) {
	e := newEnv(t, examplesDir())
	text := strings.Repeat("héllo wörld ✓ ", 500)
	for _, c := range e.fronts() {
		var res CreateBlobResult
		mustCall(t, c, "create_blob", fmt.Sprintf(`{"content":%q,"kind":"text/plain"}`, text), &res)
		got, _, _ := readRanges(t, c, res.BlobID, 100)
		assert.Equal(t, text, string(got), "%s: text pieces never split a character", c.name())

		var empty CreateBlobResult
		mustCall(t, c, "create_blob", `{"content":"","kind":"text/plain"}`, &empty)
		got, _, pieces := readRanges(t, c, empty.BlobID, 100)
		assert.Empty(t, got)
		assert.Equal(t, 1, pieces)
	}
}

func TestUploadErrors(t *testing.T) {
	e := newEnvWith(t, examplesDir(), 1000)
	const ip = transport.StringInvalidParams
	for _, c := range e.fronts() {
		var begin BeginUploadResult
		mustCall(t, c, "begin_upload", `{"kind":"text/plain","size_bytes":10}`, &begin)
		up := begin.UploadID
		chunk := func(off int, content string) string {
			return fmt.Sprintf(`{"upload_id":%q,"offset":%d,"content":%q,"encoding":"utf-8"}`, up, off, content)
		}
		var got UploadChunkResult
		mustCall(t, c, "upload_chunk", chunk(0, "01234"), &got)
		mustCall(t, c, "upload_chunk", chunk(0, "01234"), &got)
		assert.Equal(t, int64(5), got.ReceivedBytes, "a re-sent chunk is accepted")
		unknown := "upload:0123456789abcdef0123456789abcdef"
		for _, tc := range []paramCase{
			{"begin_upload", `{"size_bytes":10}`, ip, "kind"},
			{"begin_upload", `{"kind":"text/plain"}`, ip, "size_bytes"},
			{"begin_upload", `{"kind":"text/plain","size_bytes":-1}`, ip, "size_bytes"},
			{"begin_upload", `{"kind":"nonsense","size_bytes":1}`, ip, "kind"},
			{"begin_upload", `{"kind":"text/plain","size_bytes":1001}`, StringBlobTooLarge, ""},
			{"upload_chunk", chunk(0, "0123X"), ip, "offset"},
			{"upload_chunk", chunk(7, "789"), ip, "offset"},
			{"upload_chunk", chunk(5, "567890"), ip, "offset"},
			{"upload_chunk", `{"upload_id":"` + up + `","offset":5,"content":"@@@"}`, ip, "content"},
			{"upload_chunk", `{"upload_id":"` + up + `","content":"AA=="}`, ip, "offset"},
			{"upload_chunk", `{"upload_id":"../x","offset":0,"content":"AA=="}`, ip, "upload_id"},
			{"upload_chunk", `{"upload_id":"` + unknown + `","offset":0,"content":"AA=="}`, StringUploadNotFound, ""},
			{"finish_upload", `{"upload_id":"` + up + `","sha256":"` + hexSum([]byte("0123456789")) + `"}`, ip, "offset"},
			{"finish_upload", `{"upload_id":"` + up + `","sha256":"xyz"}`, ip, "sha256"},
			{"finish_upload", `{"upload_id":"` + up + `"}`, ip, "sha256"},
		} {
			checkError(t, c, tc)
		}
		mustCall(t, c, "upload_chunk", chunk(5, "56789"), &got)
		checkError(t, c, paramCase{"finish_upload", `{"upload_id":"` + up + `","sha256":"` + hexSum([]byte("wrong")) + `"}`, ip, "sha256"})
		checkError(t, c, paramCase{"upload_chunk", chunk(0, "01234"), StringUploadNotFound, ""})
		n, _ := e.blobs.Usage()
		assert.Equal(t, 0, n, "a refused finish keeps no blob")
	}
}

func TestRangeReadErrors(t *testing.T) {
	e := newEnv(t, examplesDir())
	const ip = transport.StringInvalidParams
	for _, c := range e.fronts() {
		var res CreateBlobResult
		mustCall(t, c, "create_blob", `{"content":"abc"}`, &res)
		id := res.BlobID
		for _, tc := range []paramCase{
			{"read_blob", `{"blob_id":"` + id + `","mode":"range","offset":4}`, ip, "offset"},
			{"read_blob", `{"blob_id":"` + id + `","mode":"range","offset":-1}`, ip, "offset"},
			{"read_blob", `{"blob_id":"` + id + `","mode":"range","offset":"0"}`, ip, "offset"},
			{"read_blob", `{"blob_id":"` + id + `","mode":"sample_head","offset":1}`, ip, "offset"},
			{"read_blob", `{"blob_id":"` + id + `","mode":"range","max_bytes":0}`, ip, "max_bytes"},
		} {
			checkError(t, c, tc)
		}
	}
}

// Another identity's upload is not found: covered with owners in
// TestUploadOwners through the blob package's conformance suite
// (blobtest UploadRefusals), as dispatch passes the caller's name.

// max_chunk_bytes is what one message carries as base64 (61440 / 4 * 3
// bytes here): a chunk of exactly that is taken, one byte more refused.
func TestUploadChunkAtTheLimit(t *testing.T) {
	e := newEnv(t, examplesDir())
	const limit = 46080
	for _, c := range e.fronts() {
		var begin BeginUploadResult
		mustCall(t, c, "begin_upload", fmt.Sprintf(`{"kind":"text/plain","size_bytes":%d}`, limit+1), &begin)
		assert.Equal(t, int64(limit), begin.MaxChunkBytes, c.name())
		chunk := func(off, n int) string {
			return fmt.Sprintf(`{"upload_id":%q,"offset":%d,"content":%q,"encoding":"utf-8"}`, begin.UploadID, off, strings.Repeat("a", n))
		}
		_, err := c.call("upload_chunk", chunk(0, limit+1))
		require.NotNil(t, err, c.name())
		assert.Equal(t, transport.StringInvalidParams, err.EffectiveCode())
		assert.Contains(t, err.Details, "holds more than max_chunk_bytes (46080) bytes")
		var got UploadChunkResult
		mustCall(t, c, "upload_chunk", chunk(0, limit), &got)
		assert.Equal(t, int64(limit), got.ReceivedBytes, c.name())
	}
}

// An empty blob can be uploaded: size_bytes 0 and no chunk.
func TestUploadEmptyBlob(t *testing.T) {
	e := newEnv(t, examplesDir())
	for _, c := range e.fronts() {
		res := uploadBlob(t, c, "text/plain", nil, 1)
		assert.Zero(t, res.SizeBytes, c.name())
		assert.Equal(t, hexSum(nil), res.SHA256)
	}
}

// Required upload parameters say so when absent, and a sha256 must be
// hex digits, not just 64 characters.
func TestUploadParamsRequired(t *testing.T) {
	e := newEnv(t, examplesDir())
	for _, c := range e.fronts() {
		var begin BeginUploadResult
		mustCall(t, c, "begin_upload", `{"kind":"text/plain","size_bytes":2}`, &begin)
		_, err := c.call("upload_chunk", `{"upload_id":"`+begin.UploadID+`","content":"AA=="}`)
		require.NotNil(t, err)
		assert.Contains(t, err.Details, `"offset" is required`, c.name())
		_, err = c.call("begin_upload", `{"kind":"text/plain"}`)
		require.NotNil(t, err)
		assert.Contains(t, err.Details, `"size_bytes" is required`, c.name())
		for _, sum := range []string{strings.Repeat("g", 64), strings.Repeat("0", 63) + "G", strings.Repeat("/", 64), strings.Repeat(":", 64)} {
			_, err = c.call("finish_upload", `{"upload_id":"`+begin.UploadID+`","sha256":"`+sum+`"}`)
			require.NotNil(t, err)
			assert.Contains(t, err.Details, "must be the SHA-256 of the whole blob in 64 hex digits", "%s %s", c.name(), sum)
		}
		var r CreateBlobResult
		mustCall(t, c, "upload_chunk", `{"upload_id":"`+begin.UploadID+`","offset":0,"content":"AAA="}`, &UploadChunkResult{})
		mustCall(t, c, "finish_upload", `{"upload_id":"`+begin.UploadID+`","sha256":"`+strings.ToUpper(hexSum([]byte{0, 0}))+`"}`, &r)
		assert.Equal(t, int64(2), r.SizeBytes, "%s: upper-case hex digits are hex digits", c.name())
	}
}
