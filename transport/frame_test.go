package transport

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readAll(t *testing.T, r io.Reader, max int) ([]string, error) {
	t.Helper()
	fr := NewReader(r, max)
	var got []string
	for range 1000 {
		body, err := fr.ReadFrame()
		if err != nil {
			return got, err
		}
		got = append(got, string(body))
	}
	t.Fatal("too many frames")
	return nil, nil
}

func TestReadFrameVectors(t *testing.T) {
	tests := []struct {
		name string
		wire string
		want []string
		err  error // io.EOF: clean end
		kind FrameErrorKind
	}{
		{"spec example", "0000000a:{\"a\":\"b!\"}\n", []string{`{"a":"b!"}`}, io.EOF, 0},
		{"uppercase hex", "0000000A:{\"a\":\"b!\"}\n", []string{`{"a":"b!"}`}, io.EOF, 0},
		{"two frames", "00000002:{}\n00000002:{}\n", []string{"{}", "{}"}, io.EOF, 0},
		{"utf-8 length in bytes", "0000000a:{\"m\":\"ä\"}\n", []string{`{"m":"ä"}`}, io.EOF, 0},
		{"empty body", "00000000:\n", []string{""}, io.EOF, 0},
		{"non-hex digit", "0000000g:{\"a\":\"b!\"}\n", nil, nil, FrameBadLength},
		{"plus sign", "+000000a:{\"a\":\"b!\"}\n", nil, nil, FrameBadLength},
		{"leading space", " 000000a:{\"a\":\"b!\"}\n", nil, nil, FrameBadLength},
		{"0x prefix", "0x00000a:{\"a\":\"b!\"}\n", nil, nil, FrameBadLength},
		{"semicolon", "0000000a;{\"a\":\"b!\"}\n", nil, nil, FrameNoColon},
		{"no newline", "0000000a:{\"a\":\"b!\"}X", nil, nil, FrameNoNewline},
		{"length too short", "00000009:{\"a\":\"b!\"}\n", nil, nil, FrameNoNewline},
		{"over limit", "7fffffff:", nil, nil, FrameTooLarge},
		{"second frame bad", "00000002:{}\nzzzzzzzz:", []string{"{}"}, nil, FrameBadLength},
		{"truncated body", "0000000a:{\"a\"", nil, io.ErrUnexpectedEOF, 0},
		{"truncated header", "0000", nil, io.ErrUnexpectedEOF, 0},
		{"missing final newline", "00000002:{}", nil, io.ErrUnexpectedEOF, 0},
		{"nothing", "", nil, io.EOF, 0},
	}
	for _, tt := range tests {
		for _, mode := range []string{"whole", "one byte"} {
			t.Run(tt.name+"/"+mode, func(t *testing.T) {
				var r io.Reader = strings.NewReader(tt.wire)
				if mode == "one byte" {
					r = iotest.OneByteReader(r)
				}
				got, err := readAll(t, r, 1<<20)
				assert.Equal(t, tt.want, got)
				if tt.kind != 0 {
					var fe *FrameError
					require.ErrorAs(t, err, &fe)
					assert.Equal(t, tt.kind, fe.Kind)
					return
				}
				assert.ErrorIs(t, err, tt.err)
			})
		}
	}
}

// A declared length over the limit must be rejected from the header alone:
// the reader must not wait for (or allocate) the body.
func TestOversizeRejectedBeforeBody(t *testing.T) {
	r := &countingReader{r: strings.NewReader("7fffffff:" + strings.Repeat("x", 100))}
	fr := NewReader(iotest.OneByteReader(r), 1024)
	_, err := fr.ReadFrame()
	var fe *FrameError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, FrameTooLarge, fe.Kind)
	assert.Equal(t, 0x7fffffff, fe.Length)
	assert.Equal(t, HeaderLen, r.n, "only the header may be read")
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestLargeAndMixedFrames(t *testing.T) {
	sizes := []int{0, 1, 400, 511, 512, 600, 16 << 10, 16<<10 + 1, 70 << 10, 300 << 10, 1 << 20}
	var wire []byte
	var want []string
	for i, n := range sizes {
		body := bytes.Repeat([]byte{byte('a' + i%26)}, n)
		var err error
		wire, err = AppendFrame(wire, body, 1<<20)
		require.NoError(t, err)
		want = append(want, string(body))
	}
	for _, chunk := range []int{1, 7, 4096, 1 << 30} {
		got, err := readAll(t, &chunkReader{b: wire, n: chunk}, 1<<20)
		require.ErrorIs(t, err, io.EOF)
		require.Equal(t, len(want), len(got), "chunk %d", chunk)
		for i := range want {
			require.Equal(t, want[i], got[i], "frame %d chunk %d", i, chunk)
		}
	}
}

type chunkReader struct {
	b []byte
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), c.n, len(c.b))
	copy(p, c.b[:n])
	c.b = c.b[n:]
	return n, nil
}

func TestFrameTimeout(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	fr := NewReader(server, 1024)
	fr.SetFrameTimeout(server, 50*time.Millisecond)
	go func() {
		_, _ = client.Write([]byte("00000002:{}\n0000000a:{\"a\""))
	}()
	body, err := fr.ReadFrame()
	require.NoError(t, err)
	assert.Equal(t, "{}", string(body))
	_, err = fr.ReadFrame()
	var fe *FrameError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, FrameTimeout, fe.Kind)
}

// An idle connection (no frame begun) must not time out.
func TestNoTimeoutBetweenFrames(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	fr := NewReader(server, 1024)
	fr.SetFrameTimeout(server, 20*time.Millisecond)
	go func() {
		_, _ = client.Write([]byte("00000002:{}\n"))
		time.Sleep(100 * time.Millisecond)
		_, _ = client.Write([]byte("00000002:{}\n"))
	}()
	for range 2 {
		body, err := fr.ReadFrame()
		require.NoError(t, err)
		assert.Equal(t, "{}", string(body))
	}
}

func TestEndFrame(t *testing.T) {
	got, err := AppendFrame(nil, []byte(`{"a":"b!"}`), 100)
	require.NoError(t, err)
	assert.Equal(t, []byte{0x30, 0x30, 0x30, 0x30, 0x30, 0x30, 0x30, 0x61, 0x3a, 0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0x62, 0x21, 0x22, 0x7d, 0x0a}, got)

	_, err = AppendFrame(nil, make([]byte, 101), 100)
	var fe *FrameError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, FrameTooLarge, fe.Kind)

	got, err = AppendFrame([]byte("prefix"), []byte("{}"), 100)
	require.NoError(t, err)
	assert.Equal(t, "prefix00000002:{}\n", string(got))
}

func TestReadErrorPassesThrough(t *testing.T) {
	boom := errors.New("boom")
	fr := NewReader(iotest.ErrReader(boom), 100)
	_, err := fr.ReadFrame()
	assert.ErrorIs(t, err, boom)
}

func FuzzReadFrame(f *testing.F) {
	for _, s := range []string{
		"0000000a:{\"a\":\"b!\"}\n", "0000000A:{\"a\":\"b!\"}\n", "00000002:{}\n00000002:{}\n",
		"00000000:\n", "+000000a:", "0000000a;", "7fffffff:", "00000002:{}X", "",
	} {
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, wire []byte, chunk uint8) {
		fr := NewReader(&chunkReader{b: wire, n: int(chunk%32) + 1}, 256)
		consumed := 0
		for range len(wire) + 1 {
			body, err := fr.ReadFrame()
			if err != nil {
				return
			}
			// Every accepted frame must round-trip to the bytes it came from.
			framed, ferr := AppendFrame(nil, body, 256)
			require.NoError(t, ferr)
			require.True(t, len(wire) >= consumed+len(framed))
			require.True(t, bytes.EqualFold(framed, wire[consumed:consumed+len(framed)]))
			consumed += len(framed)
		}
		t.Fatal("reader returned more frames than bytes")
	})
}

func BenchmarkReadFrame(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"pt-1"}`)
	frame, _ := AppendFrame(nil, body, 1<<20)
	wire := bytes.Repeat(frame, 256)
	r := bytes.NewReader(wire)
	fr := NewReader(r, 1<<20)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for i := 0; b.Loop(); i++ {
		if i%256 == 0 {
			r.Reset(wire)
		}
		if _, err := fr.ReadFrame(); err != nil {
			b.Fatal(err)
		}
	}
}

// FrameBuffered says whether ReadFrame can return without reading.
func TestFrameBuffered(t *testing.T) {
	for wire, want := range map[string]bool{
		"":                      false,
		"0000000":               false,
		"00000002:":             false,
		"00000002:{}":           false,
		"00000002:{}\n":         true,
		"0000000g:":             true, // a bad header fails at once
		"7fffffff:":             true, // over the limit: fails at once
		"00000002:{}\n0000000a": true,
	} {
		fr := NewReader(strings.NewReader(wire), 1024)
		if len(wire) > 0 {
			// Fill the buffer without consuming: ask for more than there is.
			_ = fr.fill(len(wire) + 1)
		}
		assert.Equal(t, want, fr.FrameBuffered(), "%q", wire)
	}
}

// FrameBuffered looks at what is left after the frames already read, and
// a header declaring exactly the limit waits for its body.
func TestFrameBufferedAfterAFrame(t *testing.T) {
	for wire, want := range map[string]bool{
		"00000002:{}\n000":           false,
		"00000002:{}\n00000002:{":    false,
		"00000002:{}\n00000002:{}\n": true,
	} {
		fr := NewReader(strings.NewReader(wire), 1024)
		_ = fr.fill(len(wire) + 1)
		_, err := fr.ReadFrame()
		require.NoError(t, err)
		assert.Equal(t, want, fr.FrameBuffered(), "%q", wire)
		assert.Equal(t, len(wire)-12, fr.Buffered(), "%q", wire)
	}
	fr := NewReader(strings.NewReader("00000002:{"), 2)
	_ = fr.fill(11)
	assert.False(t, fr.FrameBuffered(), "a body of exactly the limit is not refused")
}

// zeroReader returns (0, nil) a given number of times, then its data.
type zeroReader struct {
	zeros int
	data  io.Reader
}

func (z *zeroReader) Read(p []byte) (int, error) {
	if z.zeros > 0 {
		z.zeros--
		return 0, nil
	}
	return z.data.Read(p)
}

// A source that returns nothing and no error is given 100 tries; the
// 101st fails with io.ErrNoProgress.
func TestReadFrameNoProgress(t *testing.T) {
	fr := NewReader(&zeroReader{zeros: 100, data: strings.NewReader("00000002:{}\n")}, 1024)
	body, err := fr.ReadFrame()
	require.NoError(t, err)
	assert.Equal(t, "{}", string(body))

	fr = NewReader(&zeroReader{zeros: 101, data: strings.NewReader("00000002:{}\n")}, 1024)
	_, err = fr.ReadFrame()
	assert.True(t, errors.Is(err, io.ErrNoProgress), "%v", err)
}
