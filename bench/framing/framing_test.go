package framing

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseHeader(t *testing.T) {
	tests := []struct {
		in   string
		want int
		err  error
	}{
		{"0000000a:", 10, nil},
		{"0000000A:", 10, nil},
		{"ffffffff:", 1<<32 - 1, nil},
		{"00000000:", 0, nil},
		{"0000000g:", 0, ErrBadHeader},
		{"0000000a;", 0, ErrBadHeader},
		{" 000000a:", 0, ErrBadHeader},
		{"000000a:", 0, ErrBadHeader},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			n, err := ParseHeader([]byte(tt.in))
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, n)
		})
	}
}

func TestReadRoundTrip(t *testing.T) {
	var wire []byte
	bodies := []string{`{"a":1}`, ``, strings.Repeat("x", 70000)}
	for _, b := range bodies {
		wire = Append(wire, []byte(b))
	}
	r := bufio.NewReaderSize(bytes.NewReader(wire), 16)
	var buf []byte
	for _, want := range bodies {
		got, err := Read(r, buf, MaxBody)
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
		buf = got[:0]
	}
	_, err := Read(r, buf, MaxBody)
	assert.Equal(t, io.EOF, err)
}

func TestReadBad(t *testing.T) {
	tests := []struct {
		name, wire string
		err        error
	}{
		{"truncated header", "0000", io.ErrUnexpectedEOF},
		{"truncated body", "00000005:ab", io.ErrUnexpectedEOF},
		{"no newline", "00000002:ab!", ErrNoNewline},
		{"too large", "00100001:", ErrTooLarge},
		{"bad hex", "0000000z:", ErrBadHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(bufio.NewReader(strings.NewReader(tt.wire)), nil, MaxBody)
			require.ErrorIs(t, err, tt.err)
		})
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte("00000002:{}\n"))
	f.Add([]byte("0000000A:{\"a\":\"b!\"}\n"))
	f.Add([]byte("zzzzzzzz:"))
	f.Fuzz(func(t *testing.T, wire []byte) {
		r := bufio.NewReader(bytes.NewReader(wire))
		for range 64 {
			body, err := Read(r, nil, 1<<16)
			if err != nil {
				return
			}
			// A frame that was read re-encodes to the bytes it came from,
			// up to the case of the hex digits.
			assert.Equal(t, len(body)+HeaderLen+1, len(Append(nil, body)))
		}
	})
}
