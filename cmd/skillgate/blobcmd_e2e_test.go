package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/blob/s3blob"
	"github.com/skillgate/skillgate/internal/scaleouttest"
)

// twoIdentities writes an auth file of alice and bob and returns it with
// their tokens.
func twoIdentities(t *testing.T) (authFile string, tokens map[string]string) {
	t.Helper()
	tokens = map[string]string{}
	var idents strings.Builder
	idents.WriteString("identities:\n")
	for _, name := range []string{"alice", "bob"} {
		token, hash := newToken(t)
		tokens[name] = token
		fmt.Fprintf(&idents, "  - name: %s\n    class: service\n    tokens: [%s]\n    methods: [\"*\"]\n    namespaces: [\"*\"]\n", name, hash)
	}
	authFile = filepath.Join(t.TempDir(), "auth.yaml")
	require.NoError(t, os.WriteFile(authFile, []byte(idents.String()), 0o600))
	return authFile, tokens
}

// testFile writes n bytes of a pattern that no chunk boundary repeats.
func testFile(t *testing.T, n int) (string, []byte) {
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i*131 + i>>11)
	}
	p := filepath.Join(t.TempDir(), "data.bin")
	require.NoError(t, os.WriteFile(p, data, 0o600))
	return p, data
}

func TestBlobPutGetFS(t *testing.T) {
	authFile, tokens := twoIdentities(t)
	g := startGateway(t, "--auth-file", authFile, "--data-dir", t.TempDir())
	blobRoundTrip(t, g.addrs["tcp"], tokens)
}

func TestBlobPutGetMinIO(t *testing.T) {
	m := scaleouttest.StartMinIO(t)
	st, err := s3blob.Open(context.Background(), s3blob.Options{Bucket: "cli", Endpoint: m.Endpoint, Region: "us-east-1",
		PathStyle: true, CreateBucket: true, SweepInterval: -1})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	authFile, tokens := twoIdentities(t)
	g := startGateway(t, "--auth-file", authFile, "--blob-store", "s3://cli/e2e", "--s3-endpoint", m.Endpoint,
		"--s3-region", "us-east-1", "--s3-path-style")
	blobRoundTrip(t, g.addrs["tcp"], tokens)
}

// blobRoundTrip puts a file of several chunks and gets it back, then
// tries the bad inputs.
func blobRoundTrip(t *testing.T, addr string, tokens map[string]string) {
	path, data := testFile(t, 5<<20+4321) // several chunks (at most 2 MiB, less on 1 MiB messages)
	out, stderr, code := runCLI(t, "blob", "put", "--addr", addr, "--token", tokens["alice"], path)
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stderr, "\r", "no progress bar off a terminal")
	assert.Regexp(t, `upload upload:[0-9a-f]{32} begun`, stderr)
	var put struct {
		BlobID string `json:"blob_id"`
		Size   int64  `json:"size_bytes"`
		SHA256 string `json:"sha256"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &put), out)
	sum := sha256.Sum256(data)
	assert.Equal(t, hex.EncodeToString(sum[:]), put.SHA256)
	assert.Equal(t, int64(len(data)), put.Size)

	dest := filepath.Join(t.TempDir(), "back.bin")
	_, stderr, code = runCLI(t, "blob", "get", "--addr", addr, "--token", tokens["alice"], put.BlobID, dest)
	require.Equal(t, 0, code, stderr)
	got, err := os.ReadFile(dest)
	require.NoError(t, err)
	assert.Equal(t, data, got, "the file comes back byte for byte")
	assert.NoFileExists(t, dest+".part")

	// A cut download continues from its .part file.
	resumed := filepath.Join(t.TempDir(), "resumed.bin")
	require.NoError(t, os.WriteFile(resumed+".part", data[:3<<20], 0o600))
	_, stderr, code = runCLI(t, "blob", "get", "--addr", addr, "--token", tokens["alice"], put.BlobID, resumed)
	require.Equal(t, 0, code, stderr)
	got, err = os.ReadFile(resumed)
	require.NoError(t, err)
	assert.Equal(t, data, got)

	// A .part that is not the blob's beginning fails the digest and goes.
	bad := filepath.Join(t.TempDir(), "bad.bin")
	require.NoError(t, os.WriteFile(bad+".part", []byte("not the blob"), 0o600))
	_, stderr, code = runCLI(t, "blob", "get", "--addr", addr, "--token", tokens["alice"], put.BlobID, bad)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "sha256")
	assert.NoFileExists(t, bad)
	assert.NoFileExists(t, bad+".part")

	// An upload cut after its first chunk continues with --resume.
	up := cutUpload(t, addr, tokens["alice"], data)
	out, stderr, code = runCLI(t, "blob", "put", "--addr", addr, "--token", tokens["alice"], "--resume", up, path)
	require.Equal(t, 0, code, stderr)
	require.NoError(t, json.Unmarshal([]byte(out), &put), out)
	assert.Equal(t, hex.EncodeToString(sum[:]), put.SHA256)

	blobBadInputs(t, addr, tokens, put.BlobID, path)
}

// cutUpload begins an upload and sends its first chunk, as a put cut
// after it would have.
func cutUpload(t *testing.T, addr, token string, data []byte) string {
	c := dialLive(t, addr, nil, token)
	var up struct {
		UploadID string `json:"upload_id"`
	}
	require.NoError(t, c.call("begin_upload", fmt.Sprintf(`{"kind":"application/octet-stream","size_bytes":%d}`, len(data)), &up))
	params, _ := json.Marshal(map[string]any{"upload_id": up.UploadID, "offset": 0, "content": data[:blobPiece], "encoding": "base64"})
	var got struct {
		Received int `json:"received_bytes"`
	}
	require.NoError(t, c.call("upload_chunk", string(params), &got))
	require.Equal(t, blobPiece, got.Received)
	return up.UploadID
}

func blobBadInputs(t *testing.T, addr string, tokens map[string]string, id, path string) {
	dir := t.TempDir()
	_, stderr, code := runCLI(t, "blob", "put", "--addr", addr, "--token", tokens["alice"], filepath.Join(dir, "missing"))
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "no such file")

	dest := filepath.Join(dir, "x")
	_, stderr, code = runCLI(t, "blob", "get", "--addr", addr, "--token", tokens["alice"], "blob:"+strings.Repeat("0", 32), dest)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "BLOB_NOT_FOUND")
	assert.NoFileExists(t, dest)
	assert.NoFileExists(t, dest+".part", "a failed get leaves no empty .part")

	_, stderr, code = runCLI(t, "blob", "get", "--addr", addr, "--token", tokens["bob"], id, dest)
	assert.Equal(t, 1, code, "another identity's blob")
	assert.Contains(t, stderr, "BLOB_NOT_FOUND")
	assert.NoFileExists(t, dest)

	_, stderr, code = runCLI(t, "blob", "get", "--addr", addr, "--token", tokens["alice"], "not-a-blob", dest)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "blob_id")

	_, stderr, code = runCLI(t, "blob", "put", "--addr", addr, "--token", tokens["alice"], "--kind", "not a kind", path)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "begin_upload failed")

	_, stderr, code = runCLI(t, "blob", "put", "--addr", addr, "--token", tokens["bob"], "--resume", "upload:"+strings.Repeat("a", 32), path)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "UPLOAD_NOT_FOUND")

	_, stderr, code = runCLI(t, "blob", "put", "--addr", addr, "--token", "wrong", path)
	assert.Equal(t, 1, code)
	assert.Regexp(t, regexp.MustCompile(`AUTH_|Initialize failed`), stderr)
}

func TestProgressLine(t *testing.T) {
	assert.Equal(t, "[===============>              ]  50%  1.0 MiB / 2.0 MiB  1.0 MiB/s",
		progressLine(1<<20, 2<<20, 1e9))
	assert.Equal(t, "[==============================] 100%  0.0 MiB / 0.0 MiB  0.0 MiB/s", progressLine(0, 0, 0))
}
