// Package framing is the length-prefixed frame format of the comparison
// servers (8 hex digits of body length, ':', the body, '\n'), written the
// way a Go user would write it for a peer library: a bufio.Reader on the
// read side, one buffer per frame on the write side.
//
// It is deliberately independent of the gateway's transport package, so
// that the comparison measures each server with framing code of its own.
package framing

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// HeaderLen is the length of "xxxxxxxx:".
const HeaderLen = 9

// MaxBody is the largest body the comparison servers accept.
const MaxBody = 1 << 20

// Sentinel errors of the package.
var (
	// ErrBadHeader is a header that is not 8 hex digits and a colon.
	ErrBadHeader = errors.New("framing: bad frame header")
	// ErrTooLarge is a declared length over the limit.
	ErrTooLarge = errors.New("framing: frame too large")
	// ErrNoNewline is a body not followed by '\n'.
	ErrNoNewline = errors.New("framing: frame lacks its trailing newline")
)

// ParseHeader returns the body length declared by a 9-byte header.
func ParseHeader(h []byte) (int, error) {
	if len(h) != HeaderLen || h[8] != ':' {
		return 0, fmt.Errorf("%w: %q", ErrBadHeader, h)
	}
	n := 0
	for _, c := range h[:8] {
		d, ok := hexDigit(c)
		if !ok {
			return 0, fmt.Errorf("%w: %q", ErrBadHeader, h)
		}
		n = n<<4 | d
	}
	return n, nil
}

func hexDigit(c byte) (int, bool) {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0'), true
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10, true
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10, true
	}
	return 0, false
}

// Read reads one frame from r into buf (grown as needed) and returns the
// body, which aliases buf. It returns io.EOF only between frames.
func Read(r *bufio.Reader, buf []byte, maxBody int) ([]byte, error) {
	h, err := r.Peek(HeaderLen)
	if err != nil {
		if err == io.EOF && len(h) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	n, err := ParseHeader(h)
	if err != nil {
		return nil, err
	}
	if n > maxBody {
		return nil, fmt.Errorf("%w: %d bytes over %d", ErrTooLarge, n, maxBody)
	}
	_, _ = r.Discard(HeaderLen)
	if cap(buf) < n+1 {
		buf = make([]byte, n+1)
	}
	buf = buf[:n+1]
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if buf[n] != '\n' {
		return nil, ErrNoNewline
	}
	return buf[:n], nil
}

const hexDigits = "0123456789abcdef"

// AppendHeader appends the header of an n-byte body to dst.
func AppendHeader(dst []byte, n int) []byte {
	var h [HeaderLen]byte
	for i := 7; i >= 0; i-- {
		h[i] = hexDigits[n&0xf]
		n >>= 4
	}
	h[8] = ':'
	return append(dst, h[:]...)
}

// Append appends body framed for the wire to dst.
func Append(dst, body []byte) []byte {
	dst = AppendHeader(dst, len(body))
	dst = append(dst, body...)
	return append(dst, '\n')
}
