package blob

import (
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readerAtBlob is a Blob over bytes whose ReadAt answers as io.ReaderAt
// allows but the stores here do not: a read that reaches the end returns
// io.EOF with every byte asked for (an S3 range read may), and fail, when
// set, is returned for every read.
type readerAtBlob struct {
	data []byte
	kind string
	fail error
}

func (b readerAtBlob) ReadAt(p []byte, off int64) (int, error) {
	if b.fail != nil {
		return 0, b.fail
	}
	n := copy(p, b.data[off:])
	if off+int64(n) == int64(len(b.data)) {
		return n, io.EOF
	}
	return n, nil
}

func (b readerAtBlob) Info() Info {
	return Info{ID: "blob:0123456789abcdef0123456789abcdef", Kind: b.kind, Size: int64(len(b.data))}
}

func (readerAtBlob) Close() error { return nil }

// TestReadSampleEOFAtTheEnd: a read that reaches the blob's end with
// io.EOF is a whole read, in every mode; any other error fails the sample.
func TestReadSampleEOFAtTheEnd(t *testing.T) {
	b := readerAtBlob{data: []byte("0123456789"), kind: "text/plain"}
	for _, tc := range []struct {
		mode      SampleMode
		max       int64
		want      string
		truncated bool
	}{
		{SampleFull, 10, "0123456789", false},
		{SampleHead, 10, "0123456789", false},
		{SampleHead, 11, "0123456789", false},
		{SampleTail, 4, "6789", true},
		{SampleTail, 10, "0123456789", false},
	} {
		data, truncated, err := ReadSample(b, tc.mode, tc.max)
		require.NoError(t, err, "%s %d", tc.mode, tc.max)
		assert.Equal(t, tc.want, string(data), "%s %d", tc.mode, tc.max)
		assert.Equal(t, tc.truncated, truncated, "%s %d", tc.mode, tc.max)
	}

	broken := errors.New("disk gone")
	_, _, err := ReadSample(readerAtBlob{data: []byte("0123456789"), kind: "text/plain", fail: broken}, SampleHead, 4)
	assert.ErrorIs(t, err, broken)
	assert.ErrorContains(t, err, "read blob:0123456789abcdef0123456789abcdef")
}

// TestSampleCutCharacters: a text sample drops a character cut by the
// sample's edge, looking at most 3 bytes (a UTF-8 sequence's tail) in
// from that edge; what is not UTF-8 there is left as it is.
func TestSampleCutCharacters(t *testing.T) {
	text := func(s string) Blob { return readerAtBlob{data: []byte(s), kind: "text/plain"} }
	for _, tc := range []struct {
		name string
		b    Blob
		mode SampleMode
		max  int64
		want string
	}{
		// The head's only character start is its first byte.
		{"head cut in its first character", text("€x"), SampleHead, 2, ""},
		{"head cut in its first character, one byte", text("€x"), SampleHead, 1, ""},
		{"head of a whole first character", text("€x"), SampleHead, 3, "€"},
		{"head of a whole 4-byte character", text("😀x"), SampleHead, 4, "😀"},
		{"head cut in a 4-byte character", text("a😀x"), SampleHead, 4, "a"},
		// A tail of continuation bytes only: no start within the sample.
		{"tail of two continuation bytes", text("x€"), SampleTail, 2, "\x82\xac"},
		{"tail of one continuation byte", text("x€"), SampleTail, 1, "\xac"},
		{"tail starting at a character", text("x€"), SampleTail, 3, "€"},
		{"tail cut in a 4-byte character", text("x😀a"), SampleTail, 4, "a"},
		// Not UTF-8: four continuation bytes, then a start in the fifth
		// byte, past the 3 looked at; a head whose last start is 4 bytes
		// back is kept whole.
		{"tail looks 3 bytes in", text("x\x80\x80\x80\x80a"), SampleTail, 5, "\x80\x80\x80\x80a"},
		{"tail finds a start 3 bytes in", text("x\x80\x80\x80a"), SampleTail, 4, "a"},
		{"head whose last start is 4 bytes back", text("ab\xc3\x80\x80\x80c"), SampleHead, 6, "ab\xc3\x80\x80\x80"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, truncated, err := ReadSample(tc.b, tc.mode, tc.max)
			require.NoError(t, err)
			assert.True(t, truncated)
			assert.Equal(t, tc.want, string(data))
		})
	}
}
