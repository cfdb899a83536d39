package transport

import (
	"io"
	"net"
	"strings"
	"testing"
	"testing/iotest"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A frame has begun once its header is read, even before any byte of its
// body: a stream that ends there ends inside a frame, not between two.
func TestEndAfterHeaderIsTruncated(t *testing.T) {
	for _, wire := range []string{"00000002:", "00000000:", "00000002:{}\n0000000a:"} {
		for _, mode := range []string{"whole", "one byte"} {
			var r io.Reader = strings.NewReader(wire)
			if mode == "one byte" {
				r = iotest.OneByteReader(r)
			}
			_, err := readAll(t, r, 1024)
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "%q %s", wire, mode)
		}
	}
}

// A peer that sends a frame's header and then nothing is aborted by the
// frame timeout, counted from the header, as one that sends part of the
// body is.
func TestFrameTimeoutAfterHeaderOnly(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
	}{
		{"header in one write", []string{"0000000a:"}},
		// The header's first piece arms a deadline; the frame is still
		// late when it expires after the header is complete.
		{"header in two writes", []string{"0000", "000a:"}},
		{"after a frame", []string{"00000002:{}\n", "0000000a:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				client, server := net.Pipe()
				defer client.Close()
				defer server.Close()
				fr := NewReader(server, 1024)
				fr.SetFrameTimeout(server, 30*time.Second)
				go func() {
					for _, w := range tc.writes {
						if _, err := client.Write([]byte(w)); err != nil {
							return
						}
					}
				}()
				var err error
				for range len(tc.writes) + 1 {
					if _, err = fr.ReadFrame(); err != nil {
						break
					}
				}
				var fe *FrameError
				require.ErrorAs(t, err, &fe)
				assert.Equal(t, FrameTimeout, fe.Kind)
				assert.Equal(t, 30000, fe.Limit)
			})
		})
	}
}

// The 100 empty reads a source is allowed count inside a body too, not
// only while a header is awaited.
func TestNoProgressInsideBody(t *testing.T) {
	for _, tc := range []struct {
		zeros int
		err   error
	}{{100, nil}, {101, io.ErrNoProgress}} {
		src := io.MultiReader(strings.NewReader("00000002:"), &zeroReader{zeros: tc.zeros, data: strings.NewReader("{}\n")})
		body, err := NewReader(src, 1024).ReadFrame()
		if tc.err != nil {
			assert.ErrorIs(t, err, tc.err, "%d empty reads", tc.zeros)
			continue
		}
		require.NoError(t, err, "%d empty reads", tc.zeros)
		assert.Equal(t, "{}", string(body))
	}
}
