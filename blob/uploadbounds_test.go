package blob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestResentChunkOfExactlyMaxChunkBytes: a chunk of exactly
// MaxChunkBytes, sent again, is compared whole and accepted; one that
// differs in its last byte is refused.
func TestResentChunkOfExactlyMaxChunkBytes(t *testing.T) {
	ctx := context.Background()
	s := NewMemStore(MemOptions{})
	u := NewUploads(s, UploadOptions{MaxChunkBytes: 100})
	alice := PutOptions{Owner: "alice"}
	id, err := u.Begin(ctx, "alice", "text/plain", 150)
	require.NoError(t, err)
	first := bytes.Repeat([]byte("a"), 100)
	got, err := u.Chunk(ctx, id, alice, 0, first)
	require.NoError(t, err)
	require.EqualValues(t, 100, got)
	got, err = u.Chunk(ctx, id, alice, 0, first)
	require.NoError(t, err, "the same 100 bytes again")
	assert.EqualValues(t, 100, got)
	other := append(bytes.Repeat([]byte("a"), 99), 'b')
	_, err = u.Chunk(ctx, id, alice, 0, other)
	assert.ErrorIs(t, err, ErrInvalidUpload, "other bytes in the 100th")

	_, err = u.Chunk(ctx, id, alice, 100, bytes.Repeat([]byte("c"), 51))
	require.ErrorIs(t, err, ErrInvalidUpload)
	assert.ErrorContains(t, err, "upload chunk: bytes 100-151 lie past the declared size 150")
	got, err = u.Chunk(ctx, id, alice, 100, bytes.Repeat([]byte("c"), 50))
	require.NoError(t, err, "up to exactly the declared size")
	assert.EqualValues(t, 150, got)
}

// TestUploadBegunWithoutReceivedCount: an upload whose metadata predates
// the received count (and the fixed blob id) takes chunks counted from
// its stored chunks, and finishes.
func TestUploadBegunWithoutReceivedCount(t *testing.T) {
	ctx := context.Background()
	s := NewMemStore(MemOptions{})
	u := NewUploads(s, UploadOptions{MaxChunkBytes: 10})
	alice := PutOptions{Owner: "alice"}
	id, err := u.Begin(ctx, "alice", "text/plain", 15)
	require.NoError(t, err)
	old, err := json.Marshal(map[string]any{"owner": "alice", "kind": "text/plain", "size": 15, "created": time.Now().UTC()})
	require.NoError(t, err)
	require.NoError(t, s.Objects().PutObject(ctx, u.key(id, uploadMetaName), bytes.NewReader(old)))

	got, err := u.Chunk(ctx, id, alice, 0, []byte("0123456789"))
	require.NoError(t, err)
	assert.EqualValues(t, 10, got)
	require.NoError(t, s.Objects().PutObject(ctx, u.key(id, uploadMetaName), bytes.NewReader(old)), "still without the count")
	_, err = u.Chunk(ctx, id, alice, 5, []byte("x"))
	assert.ErrorIs(t, err, ErrInvalidUpload, "an overlap, counted from the chunks")
	got, err = u.Chunk(ctx, id, alice, 10, []byte("abcde"))
	require.NoError(t, err)
	assert.EqualValues(t, 15, got)
	sum := sha256.Sum256([]byte("0123456789abcde"))
	info, err := u.Finish(ctx, id, alice, hex.EncodeToString(sum[:]))
	require.NoError(t, err)
	assert.EqualValues(t, 15, info.Size)
	assert.Equal(t, "0123456789abcde", string(readAll(t, s, info.ID)))
}

// TestFinishClaimTiming: in virtual time, with a ClaimTimeout of 800 ms
// (polled every 40 ms, a twentieth of it), a finish behind a claim whose
// holder keeps refreshing it gives up with ErrUploadFinishing at the
// first poll after 1 s (the timeout and a quarter); behind a claim nobody
// refreshes, it takes the claim over at the first poll after it is
// 800 ms old, and makes the blob.
func TestFinishClaimTiming(t *testing.T) {
	for _, refreshed := range []bool{true, false} {
		name := map[bool]string{true: "held", false: "abandoned"}[refreshed]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				s := NewMemStore(MemOptions{})
				u := NewUploads(s, UploadOptions{ClaimTimeout: 800 * time.Millisecond})
				alice := PutOptions{Owner: "alice"}
				id, err := u.Begin(ctx, "alice", "text/plain", 1)
				require.NoError(t, err)
				_, err = u.Chunk(ctx, id, alice, 0, []byte("x"))
				require.NoError(t, err)
				claim := u.key(id, uploadClaimName)
				require.NoError(t, s.Objects().CreateObject(ctx, claim, nil))
				stop := make(chan struct{})
				if refreshed {
					go func() {
						for {
							select {
							case <-stop:
								return
							case <-time.After(100 * time.Millisecond):
								_ = s.Objects().PutObject(ctx, claim, bytes.NewReader(nil))
							}
						}
					}()
				}
				start := time.Now()
				sum := sha256.Sum256([]byte("x"))
				_, err = u.Finish(ctx, id, alice, hex.EncodeToString(sum[:]))
				elapsed := time.Since(start)
				close(stop)
				if refreshed {
					assert.ErrorIs(t, err, ErrUploadFinishing)
					assert.Equal(t, 1040*time.Millisecond, elapsed)
					return
				}
				require.NoError(t, err)
				assert.Equal(t, 840*time.Millisecond, elapsed)
			})
		})
	}
}
