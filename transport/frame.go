package transport

import (
	"errors"
	"io"
	"os"
	"sync"
	"time"
)

// Frame layout: 8 hex digits of body length, ':', the body, '\n'.
const (
	HeaderLen     = 9               // length digits plus the colon
	FrameOverhead = HeaderLen + 1   // header plus the trailing newline
	MaxFrameBody  = 1<<32 - 1       // the largest length 8 hex digits can declare
	idleBufSize   = 128             // a keepalive fits; larger frames borrow a pooled buffer
	busyBufSize   = 16 << 10        // pooled buffer used while frames are flowing
	maxPooledBody = 4 * busyBufSize // larger bodies get a buffer of their own
)

// Deadliner is the part of net.Conn the reader uses to bound a frame's
// arrival time.
type Deadliner interface {
	SetReadDeadline(t time.Time) error
}

// Reader reads frames from a byte stream. It holds only a small buffer while
// the stream is idle and borrows a larger pooled one while frames arrive, so
// that thousands of idle connections cost little memory.
//
// A Reader is not safe for concurrent use. The body returned by ReadFrame is
// valid until the next call to ReadFrame.
type Reader struct {
	src          io.Reader
	maxBody      int
	frameTimeout time.Duration
	deadliner    Deadliner // nil: frames have no deadline
	deadlineSet  bool      // a read deadline is armed (possibly from an earlier frame)
	deadline     time.Time
	frameStart   time.Time // when the current frame's first byte was seen; zero before
	inBody       bool      // the header is consumed: the frame has begun, even with no body byte yet

	buf  []byte // idle[:] or a pooled busy buffer
	r, w int    // unread data is buf[r:w]
	busy *[]byte
	big  *[]byte // a body larger than the busy buffer, released on the next ReadFrame
	idle [idleBufSize]byte
}

// NewReader returns a Reader that rejects bodies longer than maxBody.
func NewReader(src io.Reader, maxBody int) *Reader {
	fr := &Reader{}
	fr.Reset(src, maxBody)
	return fr
}

// Reset makes fr read from src, discarding any buffered data.
func (fr *Reader) Reset(src io.Reader, maxBody int) {
	fr.release()
	fr.src, fr.maxBody = src, maxBody
	fr.buf, fr.r, fr.w = fr.idle[:], 0, 0
	fr.deadliner, fr.frameTimeout, fr.deadlineSet, fr.inBody = nil, 0, false, false
}

// SetFrameTimeout makes a frame that has begun fail with ErrFrameTimeout
// unless it completes within d. Deadlines are set only while a frame is
// partially received, so idle connections cost no timer.
func (fr *Reader) SetFrameTimeout(d Deadliner, timeout time.Duration) {
	fr.deadliner, fr.frameTimeout = d, timeout
}

// Buffered reports how many bytes are buffered but not yet returned.
func (fr *Reader) Buffered() int { return fr.w - fr.r }

// FrameBuffered reports whether the next ReadFrame can return without
// reading: a whole frame, or a bad header, is buffered.
func (fr *Reader) FrameBuffered() bool {
	if fr.w-fr.r < HeaderLen {
		return false
	}
	n, err := parseHeader(fr.buf[fr.r : fr.r+HeaderLen])
	return err != nil || n > fr.maxBody || fr.w-fr.r >= HeaderLen+n+1
}

// ReadFrame returns the next frame's body. It returns io.EOF when the stream
// ends cleanly between frames, io.ErrUnexpectedEOF when it ends inside a
// frame, and a *FrameError when the framing is invalid; in the last case
// nothing past the bad header has been read or allocated.
func (fr *Reader) ReadFrame() ([]byte, error) {
	if fr.big != nil {
		putBuf(fr.big)
		fr.big = nil
	}
	fr.frameStart, fr.inBody = time.Time{}, false
	if err := fr.fill(HeaderLen); err != nil {
		return nil, err
	}
	n, err := parseHeader(fr.buf[fr.r : fr.r+HeaderLen])
	if err != nil {
		return nil, err
	}
	if n > fr.maxBody {
		return nil, &FrameError{Kind: FrameTooLarge, Length: n, Limit: fr.maxBody}
	}
	fr.r += HeaderLen
	fr.inBody = true
	return fr.readBody(n)
}

// readBody returns the n-byte body and consumes the trailing newline.
func (fr *Reader) readBody(n int) ([]byte, error) {
	if n+1 > maxPooledBody {
		return fr.readLargeBody(n)
	}
	if err := fr.fill(n + 1); err != nil {
		return nil, err
	}
	body := fr.buf[fr.r : fr.r+n]
	if fr.buf[fr.r+n] != '\n' {
		return nil, &FrameError{Kind: FrameNoNewline, Length: n}
	}
	fr.r += n + 1
	return body, nil
}

// readLargeBody reads a body too big for the pooled buffer into a buffer of
// its own, copying what is already buffered first.
func (fr *Reader) readLargeBody(n int) ([]byte, error) {
	fr.big = getBuf(n + 1)
	dst := (*fr.big)[:n+1]
	copied := copy(dst, fr.buf[fr.r:fr.w])
	fr.r += copied
	if copied < len(dst) {
		fr.armDeadline()
		if _, err := io.ReadFull(fr.src, dst[copied:]); err != nil {
			return nil, fr.readErr(err, true)
		}
	}
	if dst[n] != '\n' {
		return nil, &FrameError{Kind: FrameNoNewline, Length: n}
	}
	return dst[:n], nil
}

// fill makes at least n bytes available in buf[r:w].
func (fr *Reader) fill(n int) error {
	if fr.w-fr.r >= n {
		return nil
	}
	fr.makeRoom(n)
	for zeroReads := 0; fr.w-fr.r < n; {
		if fr.begun() {
			fr.armDeadline()
		}
		m, err := fr.src.Read(fr.buf[fr.w:])
		fr.w += m
		if err != nil {
			if fr.w-fr.r >= n {
				return nil
			}
			if !fr.begun() && fr.deadlineSet && errors.Is(err, os.ErrDeadlineExceeded) {
				// A deadline armed for an earlier frame expired while no
				// frame had begun: nothing is late, wait on.
				fr.clearDeadline()
				continue
			}
			return fr.readErr(err, fr.begun())
		}
		if m > 0 {
			zeroReads = 0
		} else if zeroReads++; zeroReads > 100 {
			return io.ErrNoProgress
		}
	}
	return nil
}

// begun reports whether a frame has begun: some of it is buffered, or its
// header was consumed and its body has not come yet.
func (fr *Reader) begun() bool { return fr.inBody || fr.w > fr.r }

// makeRoom ensures buf[r:] can hold n bytes. An empty reader drops back to
// the small idle buffer; a frame that does not fit moves to a pooled one.
func (fr *Reader) makeRoom(n int) {
	pending := fr.w - fr.r
	if pending == 0 {
		fr.r, fr.w = 0, 0
		if fr.busy != nil && n <= len(fr.idle) {
			putBuf(fr.busy)
			fr.busy, fr.buf = nil, fr.idle[:]
		}
	}
	if fr.r+n <= len(fr.buf) {
		return
	}
	if n <= len(fr.buf) {
		copy(fr.buf, fr.buf[fr.r:fr.w])
		fr.r, fr.w = 0, pending
		return
	}
	busy := getBuf(max(n, busyBufSize))
	fr.w = copy(*busy, fr.buf[fr.r:fr.w])
	fr.r = 0
	if fr.busy != nil {
		putBuf(fr.busy)
	}
	fr.busy, fr.buf = busy, *busy
}

// armDeadline bounds the frame that has begun: it must end within the
// frame timeout of its first byte, however slowly the bytes come. A
// deadline armed for an earlier frame is kept while it falls within this
// frame's own bound and leaves it at least half the timeout, so pipelined
// frames that span reads do not reset it each time: a begun frame
// completes within the timeout, or aborts after between half and all of it.
func (fr *Reader) armDeadline() {
	if fr.deadliner == nil || fr.frameTimeout <= 0 {
		return
	}
	now := time.Now()
	if fr.frameStart.IsZero() {
		fr.frameStart = now
	}
	limit := fr.frameStart.Add(fr.frameTimeout)
	if fr.deadlineSet && !fr.deadline.After(limit) && !fr.deadline.Before(limit.Add(-fr.frameTimeout/2)) {
		return
	}
	fr.deadlineSet, fr.deadline = true, limit
	_ = fr.deadliner.SetReadDeadline(limit)
}

func (fr *Reader) clearDeadline() {
	fr.deadlineSet = false
	_ = fr.deadliner.SetReadDeadline(time.Time{})
}

// readErr classifies a read error: a deadline that expired mid-frame is a
// frame timeout, EOF mid-frame is a truncated frame.
func (fr *Reader) readErr(err error, inFrame bool) error {
	switch {
	case fr.deadlineSet && errors.Is(err, os.ErrDeadlineExceeded):
		return &FrameError{Kind: FrameTimeout, Limit: int(fr.frameTimeout / time.Millisecond)}
	case inFrame && (err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF)):
		return io.ErrUnexpectedEOF
	}
	return err
}

func (fr *Reader) release() {
	if fr.big != nil {
		putBuf(fr.big)
		fr.big = nil
	}
	if fr.busy != nil {
		putBuf(fr.busy)
		fr.busy = nil
	}
}

// parseHeader validates "xxxxxxxx:" and returns the declared body length.
// Only the 22 hex digit characters are accepted: no sign, no space, no 0x.
func parseHeader(h []byte) (int, error) {
	var n uint64
	for i := 0; i < 8; i++ {
		d := hexVal[h[i]]
		if d > 15 {
			return 0, &FrameError{Kind: FrameBadLength, Header: string(h)}
		}
		n = n<<4 | uint64(d)
	}
	if h[8] != ':' {
		return 0, &FrameError{Kind: FrameNoColon, Header: string(h)}
	}
	return int(n), nil
}

var hexVal = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c-'a') + 10
		t[c-'a'+'A'] = byte(c-'a') + 10
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// BeginFrame appends room for a frame header to dst and returns the extended
// slice; append the body, then call EndFrame with the same start offset.
func BeginFrame(dst []byte) []byte {
	return append(dst, "00000000:"...)
}

// EndFrame fills in the header of the frame that starts at dst[start] and
// appends the trailing newline. It fails when the body exceeds maxBody.
func EndFrame(dst []byte, start, maxBody int) ([]byte, error) {
	n := len(dst) - start - HeaderLen
	if n < 0 || n > maxBody || n > MaxFrameBody {
		return dst, &FrameError{Kind: FrameTooLarge, Length: n, Limit: maxBody}
	}
	h := dst[start : start+8]
	for i := 7; i >= 0; i-- {
		h[i] = hexDigits[n&0xf]
		n >>= 4
	}
	return append(dst, '\n'), nil
}

// AppendFrame appends body framed for the wire to dst.
func AppendFrame(dst, body []byte, maxBody int) ([]byte, error) {
	start := len(dst)
	dst = BeginFrame(dst)
	dst = append(dst, body...)
	return EndFrame(dst, start, maxBody)
}

// Buffer pool, in size classes so that large bodies are reused too.
var bufClasses = [...]int{busyBufSize, 64 << 10, 256 << 10, 1 << 20}

var bufPools [len(bufClasses)]sync.Pool

func classOf(n int) int {
	for i, size := range bufClasses {
		if n <= size {
			return i
		}
	}
	return -1
}

// getBuf returns a buffer of at least n bytes (len = capacity class size).
func getBuf(n int) *[]byte {
	c := classOf(n)
	if c < 0 {
		b := make([]byte, n)
		return &b
	}
	if p, ok := bufPools[c].Get().(*[]byte); ok {
		return p
	}
	b := make([]byte, bufClasses[c])
	return &b
}

func putBuf(p *[]byte) {
	if c := classOf(cap(*p)); c >= 0 && cap(*p) == bufClasses[c] {
		*p = (*p)[:cap(*p)]
		bufPools[c].Put(p)
	}
}
