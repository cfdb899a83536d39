package sandbox

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestLogBufferPreview(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"empty", nil, ""},
		{"small", []string{"a\n", "b\n"}, "a\nb\n"},
		{"exactly full", []string{strings.Repeat("x", 16)}, strings.Repeat("x", 16)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newLogBuffer(16, 1<<20)
			for _, w := range tc.writes {
				n, err := b.stream(StreamStdout).Write([]byte(w))
				assert.NoError(t, err)
				assert.Equal(t, len(w), n)
			}
			assert.Equal(t, tc.want, b.Preview())
		})
	}
}

func TestLogBufferKeepsTheEnd(t *testing.T) {
	b := newLogBuffer(MaxLogsPreview, 1<<20)
	for i := range 1000 {
		_, _ = b.stream(StreamStdout).Write([]byte(strings.Repeat("x", i%50) + "\n"))
	}
	_, _ = b.stream(StreamStdout).Write([]byte("Traceback: the error\n"))
	p := b.Preview()
	assert.LessOrEqual(t, len(p), MaxLogsPreview)
	assert.True(t, strings.HasPrefix(p, "[... "), p[:30])
	assert.True(t, strings.HasSuffix(p, "Traceback: the error\n"))
	assert.Equal(t, int64(25521), b.Total())
}

func TestLogBufferOverflow(t *testing.T) {
	b := newLogBuffer(8, 100)
	_, _ = b.stream(StreamStdout).Write(make([]byte, 100))
	select {
	case <-b.overflow:
		t.Fatal("at the cap is not past it")
	default:
	}
	_, _ = b.stream(StreamStdout).Write([]byte("x"))
	_, _ = b.stream(StreamStdout).Write([]byte("y")) // a second crossing must not close twice
	<-b.overflow
}

func TestLogBufferUTF8(t *testing.T) {
	b := newLogBuffer(64, 1<<20)
	_, _ = b.stream(StreamStdout).Write([]byte(strings.Repeat("é", 100))) // the cut lands inside a rune
	p := b.Preview()
	assert.True(t, utf8.ValidString(p))
	assert.LessOrEqual(t, len(p), 64)
	assert.Contains(t, p, "éé")
}

// Invalid bytes grow the preview's tail (each becomes U+FFFD, 3 bytes):
// the tail is the longest end of the logs that fits once cleaned, and the
// marker counts the raw bytes cut.
func TestLogBufferInvalidUTF8Tail(t *testing.T) {
	b := newLogBuffer(64, 1<<20)
	_, _ = b.stream(StreamStdout).Write([]byte(strings.Repeat("x\xff", 100)))
	// 24 bytes of marker leave 40: ten "x\xff" pairs, 4 bytes each once
	// cleaned. Starting one byte earlier, at an \xff, would take 43.
	assert.Equal(t, "[... 180 bytes cut ...]\n"+strings.Repeat("x\uFFFD", 10), b.Preview())

	b = newLogBuffer(64, 1<<20)
	_, _ = b.stream(StreamStdout).Write([]byte(strings.Repeat("caf\xe9 ", 40))) // Latin-1 text
	p := b.Preview()
	assert.True(t, utf8.ValidString(p))
	assert.Len(t, p, 64, "the room is used up to the last byte")
	assert.True(t, strings.HasSuffix(p, "caf\uFFFD "), "%q", p)

	// Only continuation bytes: no character starts in the end kept.
	b = newLogBuffer(64, 1<<20)
	_, _ = b.stream(StreamStdout).Write([]byte(strings.Repeat("\x80", 100)))
	assert.Equal(t, "[... 100 bytes cut ...]\n", b.Preview())
}

func FuzzLogBuffer(f *testing.F) {
	f.Add([]byte("hello\n"), []byte("\xff\xfe"), uint8(16))
	f.Add([]byte(strings.Repeat("é", 40)), []byte("end"), uint8(40))
	f.Fuzz(func(t *testing.T, a, b []byte, keep uint8) {
		k := int(keep)%200 + 40 // room for the marker
		buf := newLogBuffer(k, 1<<30)
		for range 3 {
			_, _ = buf.stream(StreamStdout).Write(a)
			_, _ = buf.stream(StreamStdout).Write(b)
		}
		p := buf.Preview()
		if len(p) > k || !utf8.ValidString(p) {
			t.Fatalf("preview %q (keep %d)", p, k)
		}
		if buf.Total() <= int64(k) && utf8.Valid(append(append([]byte{}, a...), b...)) {
			assert.Equal(t, strings.Repeat(string(a)+string(b), 3), p)
		}
	})
}
