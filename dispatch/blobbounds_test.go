package dispatch

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/transport"
)

// The numbers below follow from the test gateway's 64 KiB message limit:
// 4096 bytes of each response are kept for everything but the content, so
// a text piece carries at most 61440 bytes and a base64 one 61440 / 4 * 3
// = 46080 raw bytes.
const (
	textLimit   = 61440
	binaryLimit = 46080
)

// putKind stores data as a blob of the given kind owned by the anonymous
// identity (the caller of an open gateway).
func (e *env) putKind(t *testing.T, kind string, data []byte) string {
	t.Helper()
	info, err := e.blobs.Put(t.Context(), e.blobs.NewID(), blob.PutOptions{Kind: kind, Owner: auth.AnonymousName},
		bytes.NewReader(data))
	require.NoError(t, err)
	return info.ID
}

func binaryData(n int) []byte {
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i*7 + 1)
	}
	return data
}

// readPiece reads one range piece and decodes its content.
func readPiece(t *testing.T, c caller, params string) (ReadBlobRangeResult, []byte) {
	t.Helper()
	var r ReadBlobRangeResult
	mustCall(t, c, "read_blob", params, &r)
	if r.Encoding == EncodingBase64 {
		raw, err := base64.StdEncoding.DecodeString(r.Content)
		require.NoError(t, err)
		return r, raw
	}
	return r, []byte(r.Content)
}

func rangeParams(id string, offset int, maxBytes int) string {
	if maxBytes == 0 {
		return fmt.Sprintf(`{"blob_id":%q,"mode":"range","offset":%d}`, id, offset)
	}
	return fmt.Sprintf(`{"blob_id":%q,"mode":"range","offset":%d,"max_bytes":%d}`, id, offset, maxBytes)
}

// A range piece holds exactly what was asked: 4096 bytes without
// max_bytes, max_bytes with it; and truncated goes with next_offset.
func TestRangePieceSize(t *testing.T) {
	e := newEnv(t, examplesDir())
	text := e.putKind(t, "text/plain", []byte(strings.Repeat("a", 5000)))
	for _, c := range e.fronts() {
		r, got := readPiece(t, c, rangeParams(text, 0, 0))
		assert.Len(t, got, 4096, "%s: the default piece", c.name())
		require.NotNil(t, r.NextOffset)
		assert.Equal(t, int64(4096), *r.NextOffset)
		assert.True(t, r.Truncated)

		r, got = readPiece(t, c, rangeParams(text, 100, 10))
		assert.Equal(t, strings.Repeat("a", 10), string(got), c.name())
		require.NotNil(t, r.NextOffset)
		assert.Equal(t, int64(110), *r.NextOffset)

		r, got = readPiece(t, c, rangeParams(text, 4990, 10))
		assert.Len(t, got, 10, "%s: a piece ending exactly at the end", c.name())
		assert.Nil(t, r.NextOffset)
		assert.False(t, r.Truncated)
	}
}

// Base64 pieces other than the last hold a multiple of 3 bytes; the last
// one holds what is left, whatever its length, and a piece asked for
// fewer than 3 bytes is not cut to nothing.
func TestRangeBase64PieceBoundaries(t *testing.T) {
	e := newEnv(t, examplesDir())
	data := binaryData(100)
	ten := e.putKind(t, "application/octet-stream", data[:10])
	hundred := e.putKind(t, "application/octet-stream", data)
	for _, c := range e.fronts() {
		r, got := readPiece(t, c, rangeParams(ten, 0, 10))
		assert.Equal(t, EncodingBase64, r.Encoding)
		assert.Equal(t, data[:10], got, "%s: the whole blob in one piece", c.name())
		assert.Nil(t, r.NextOffset, c.name())
		assert.False(t, r.Truncated, c.name())

		r, got = readPiece(t, c, rangeParams(ten, 3, 7))
		assert.Equal(t, data[3:10], got, "%s: the last 7 bytes in one piece", c.name())
		assert.Nil(t, r.NextOffset, c.name())

		r, got = readPiece(t, c, rangeParams(hundred, 0, 10))
		assert.Equal(t, data[:9], got, "%s: cut to a multiple of 3", c.name())
		require.NotNil(t, r.NextOffset)
		assert.Equal(t, int64(9), *r.NextOffset)
		assert.True(t, r.Truncated)

		r, got = readPiece(t, c, rangeParams(hundred, 0, 2))
		assert.Equal(t, data[:2], got, "%s: fewer than 3 bytes asked", c.name())
		require.NotNil(t, r.NextOffset)
		assert.Equal(t, int64(2), *r.NextOffset)
	}
}

// Every piece of a text blob is UTF-8 text: a character the piece would
// cut is left for the next piece, whatever its length in bytes.
func TestRangeTextPiecesStayText(t *testing.T) {
	e := newEnv(t, examplesDir())
	for _, char := range []string{"é", "✓", "𝄞"} {
		text := strings.Repeat("a"+char, 40)
		id := e.putKind(t, "text/plain", []byte(text))
		for _, c := range e.fronts() {
			var joined strings.Builder
			for off, pieces := int64(0), 0; ; pieces++ {
				require.Less(t, pieces, 200)
				r, got := readPiece(t, c, rangeParams(id, int(off), 4))
				require.Equal(t, EncodingUTF8, r.Encoding, "%s %q at %d", c.name(), char, off)
				require.True(t, utf8.Valid(got))
				require.NotEmpty(t, got)
				joined.Write(got)
				if r.NextOffset == nil {
					break
				}
				off = *r.NextOffset
			}
			assert.Equal(t, text, joined.String(), "%s %q", c.name(), char)
		}
	}
}

// Characters are whole in the pieces of text kinds only, and only where a
// piece ends before the blob does: the last piece holds everything left
// (here a cut character, so it comes as base64), and a binary blob's
// pieces are cut at multiples of 3 whatever their bytes look like.
func TestRangeCutCharacterOnlyInsideTextBlobs(t *testing.T) {
	e := newEnv(t, examplesDir())
	tail := []byte("abc\xc3")
	textTail := e.putKind(t, "text/plain", tail)
	check := []byte("abcde\xe2\x9c\x93")
	binCheck := e.putKind(t, "application/octet-stream", check)
	for _, c := range e.fronts() {
		r, got := readPiece(t, c, rangeParams(textTail, 0, 10))
		assert.Equal(t, EncodingBase64, r.Encoding, c.name())
		assert.Equal(t, tail, got, "%s: the last piece holds all that is left", c.name())
		assert.Nil(t, r.NextOffset, c.name())

		r, got = readPiece(t, c, rangeParams(binCheck, 0, 6))
		assert.Equal(t, check[:6], got, "%s: a binary piece ends where its size says", c.name())
		require.NotNil(t, r.NextOffset, c.name())
		assert.Equal(t, int64(6), *r.NextOffset)
	}
}

// A text piece cut short because its escapes fill the response still
// says there is more: truncated goes with next_offset.
func TestRangeTextCutByEscapes(t *testing.T) {
	e := newEnv(t, examplesDir())
	id := e.putKind(t, "text/plain", []byte(strings.Repeat(`"`, 40000)))
	for _, c := range e.fronts() {
		r, got := readPiece(t, c, rangeParams(id, 0, 40000))
		assert.Len(t, got, textLimit/2, "%s: each quote takes two bytes", c.name())
		require.NotNil(t, r.NextOffset, c.name())
		assert.Equal(t, int64(textLimit/2), *r.NextOffset)
		assert.True(t, r.Truncated, "%s: a piece with a next_offset is truncated", c.name())
	}
}

// A blob of a text kind whose bytes are no text comes as base64, cut to
// what one response carries.
func TestRangeTextKindBinaryContent(t *testing.T) {
	e := newEnv(t, examplesDir())
	data := bytes.Repeat([]byte{0xff}, textLimit+10)
	id := e.putKind(t, "text/plain", data)
	for _, c := range e.fronts() {
		r, got := readPiece(t, c, rangeParams(id, 0, textLimit))
		assert.Equal(t, EncodingBase64, r.Encoding)
		assert.Len(t, got, binaryLimit, c.name())
		require.NotNil(t, r.NextOffset, c.name())
		assert.Equal(t, int64(binaryLimit), *r.NextOffset)
		assert.True(t, r.Truncated, c.name())
	}
}

// mode "full" returns a blob of exactly what one response carries and
// refuses one byte more, for text and for base64.
func TestReadFullAtTheLimit(t *testing.T) {
	e := newEnv(t, examplesDir())
	for _, tc := range []struct {
		kind  string
		limit int
		data  func(int) []byte
	}{
		{"text/plain", textLimit, func(n int) []byte { return []byte(strings.Repeat("a", n)) }},
		{"application/octet-stream", binaryLimit, binaryData},
	} {
		at := e.putKind(t, tc.kind, tc.data(tc.limit))
		over := e.putKind(t, tc.kind, tc.data(tc.limit+1))
		for _, c := range e.fronts() {
			var r ReadBlobResult
			mustCall(t, c, "read_blob", `{"blob_id":"`+at+`","mode":"full"}`, &r)
			assert.False(t, r.Truncated, "%s %s", c.name(), tc.kind)
			got := []byte(r.Content)
			if r.Encoding == EncodingBase64 {
				var err error
				got, err = base64.StdEncoding.DecodeString(r.Content)
				require.NoError(t, err)
			}
			assert.Equal(t, tc.data(tc.limit), got, "%s %s", c.name(), tc.kind)
			checkError(t, c, paramCase{"read_blob", `{"blob_id":"` + over + `","mode":"full"}`,
				transport.StringInvalidParams, "mode"})
			_, err := c.call("read_blob", `{"blob_id":"`+over+`","mode":"full"}`)
			require.NotNil(t, err)
			assert.Contains(t, err.Details, `"mode":"range" and "offset"`, "the way to read it whole is named first")
			assert.Contains(t, err.Details, `"sample_head" or "sample_tail"`)
		}
	}
}

// offset belongs to mode "range" only, including offset 0.
func TestReadBlobOffsetZeroOutsideRange(t *testing.T) {
	e := newEnv(t, examplesDir())
	id := e.putBlob(t, "abc")
	for _, c := range e.fronts() {
		for _, mode := range []string{"sample_head", "sample_tail", "full"} {
			checkError(t, c, paramCase{"read_blob", `{"blob_id":"` + id + `","mode":"` + mode + `","offset":0}`,
				transport.StringInvalidParams, "offset"})
		}
		res, err := c.call("read_blob", `{"blob_id":"`+id+`","mode":"range","offset":0}`)
		require.Nil(t, err)
		var r ReadBlobRangeResult
		require.NoError(t, json.Unmarshal(res, &r))
		assert.Equal(t, "abc", r.Content)
	}
}

// Content with a NUL byte, even at its very start, travels as base64:
// it is no JSON text a client could take as it is.
func TestNULByteMeansBase64(t *testing.T) {
	e := newEnv(t, examplesDir())
	for _, data := range [][]byte{[]byte("\x00abc"), []byte("ab\x00c")} {
		id := e.putKind(t, "text/plain", data)
		for _, c := range e.fronts() {
			var r ReadBlobResult
			mustCall(t, c, "read_blob", `{"blob_id":"`+id+`","mode":"full"}`, &r)
			assert.Equal(t, EncodingBase64, r.Encoding, "%s %q", c.name(), data)
			assert.Equal(t, base64.StdEncoding.EncodeToString(data), r.Content)
		}
	}
}
