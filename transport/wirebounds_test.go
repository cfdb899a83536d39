package transport

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Inside a string, 0x1f is the last control character (refused) and 0x20,
// a space, the first byte taken as is; 0x7f is the last ASCII byte and a
// lone 0x80 the first that must start a valid UTF-8 sequence.
func TestStringByteBounds(t *testing.T) {
	for _, tc := range []struct {
		b     byte
		valid bool
	}{{0x1f, false}, {0x20, true}, {0x7f, true}, {0x80, false}} {
		body := `{"jsonrpc":"2.0","method":"a` + string([]byte{tc.b}) + `b","params":{}}`
		assert.Equal(t, tc.valid, ValidJSON([]byte(body)), "byte %#x", tc.b)
		var m Message
		err := Decode([]byte(body), &m)
		if !tc.valid {
			var pe *ParseError
			assert.True(t, errors.As(err, &pe), "byte %#x: %v", tc.b, err)
			continue
		}
		require.NoError(t, err, "byte %#x", tc.b)
		assert.Equal(t, "a"+string([]byte{tc.b})+"b", string(m.Method))
	}
}

// A frame costs its body plus 10 bytes on the wire: 8 hex digits, the
// colon and the newline. Other layers count queued bytes with FrameOverhead.
func TestFrameOverheadIsTenBytes(t *testing.T) {
	assert.Equal(t, 10, FrameOverhead)
	for _, n := range []int{0, 1, 100} {
		framed, err := AppendFrame(nil, []byte(strings.Repeat("x", n)), 1024)
		require.NoError(t, err)
		assert.Len(t, framed, n+FrameOverhead)
	}
}

// MaxFrameBody is the largest length a header can declare, ffffffff.
func TestMaxFrameBodyIsLargestHeader(t *testing.T) {
	assert.Equal(t, 1<<32-1, MaxFrameBody)
	_, err := NewReader(strings.NewReader("ffffffff:"), 1024).ReadFrame()
	var fe *FrameError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, FrameTooLarge, fe.Kind)
	assert.Equal(t, MaxFrameBody, fe.Length)
}
