package session

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/transport"
)

// maxBatchBytes bounds one coalesced write, so that urgent frames queued
// meanwhile (keepalive answers, _CloseReason) wait for at most one batch.
const maxBatchBytes = 256 << 10

// quietLimit is how many bytes of answers the read loop may queue before
// the writer starts without waiting for the loop's kick.
const quietLimit = 64 << 10

// finalWriteTimeout bounds writing the _CloseReason of a connection whose
// peer may not be reading: the notification must not hold the close up.
const finalWriteTimeout = 2 * time.Second

// writeQueue owns the socket's write side. Frames are queued by any
// goroutine; a writer goroutine, started when frames arrive and exiting when
// the queue is empty, alone writes them, coalescing everything queued into
// one vectored write. Urgent frames are written before queued responses.
//
// Every frame counts against Config.MaxQueuedBytes from the moment it is
// queued until it has been written or dropped, urgent or not and including
// the batch being written: a peer can make the gateway hold at most that
// many bytes for it, whatever it sends. The same bytes are reserved from
// the gateway-wide Config.Budget.
type writeQueue struct {
	c        *Conn
	nc       net.Conn
	vectored bool // the socket supports writev (plain TCP)

	mu      sync.Mutex // guards the fields below
	urgent  []*[]byte
	normal  []*[]byte
	queued  int  // bytes in urgent, normal, the batch being written and final
	writing int  // bytes of the batch being written, part of queued
	peak    int  // the largest queued seen, for tests
	running bool // a writer goroutine exists
	closing bool // no more frames are accepted
	final   *[]byte
	closed  bool // the socket is closed

	changed sync.Cond   // signaled (with mu) when the writer takes frames or exits
	batch   []*[]byte   // owned by the writer goroutine
	iov     net.Buffers // owned by the writer goroutine
	// full is set while more than half of MaxQueuedBytes is held: the read
	// loop then stops reading until the writer catches up (waitRoom).
	full atomic.Bool
	// deadline is the write deadline armed last; owned by the writer goroutine.
	deadline time.Time
	// closeBy, once set (unix nanoseconds), bounds every remaining write:
	// a closing connection's last frames must not hold its close up.
	closeBy atomic.Int64
	// share is the part of the gateway-wide budget of the connection's
	// owner, which counts the bytes held here as queued does (nil: none).
	// It changes only with mu held, so queued moves with it; it is read
	// without mu to admit work.
	share atomic.Pointer[Share]
}

func (q *writeQueue) init(c *Conn, nc net.Conn) {
	q.c, q.nc = c, nc
	q.changed.L = &q.mu
	_, q.vectored = nc.(*net.TCPConn)
}

// waitRoom blocks the read loop while the queue is more than half full,
// so that a peer which sends faster than it reads is slowed down by TCP
// flow control rather than cut off. It returns at once when the connection
// is closing; a peer that stops reading altogether runs into the write
// deadline and is cut off as a slow reader.
func (q *writeQueue) waitRoom() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.overHalfLocked() && !q.closing {
		q.startLocked()
		q.changed.Wait()
	}
	q.full.Store(false)
}

// kick starts the writer if frames wait.
func (q *writeQueue) kick() {
	q.mu.Lock()
	if len(q.urgent) > 0 || len(q.normal) > 0 {
		q.startLocked()
	}
	q.mu.Unlock()
}

// startLocked starts the writer goroutine unless it runs already. The new
// goroutine takes q.mu before it touches the queue, so it waits for the
// caller to unlock.
func (q *writeQueue) startLocked() {
	if !q.running {
		q.running = true
		go q.run()
	}
}

// push queues a frame. Urgent frames go ahead of queued responses. With
// start unset the writer is not started: the read loop queues the answers
// it produces itself and kicks the writer once its input is drained, so
// that answers to pipelined requests leave in one write. reserved says the
// caller has already taken the frame's bytes from the budget. push reports
// false (and releases the frame) when the connection is closing, or when
// the frame would make the connection hold more than MaxQueuedBytes, in
// which case the peer is not reading and the connection is aborted with
// SLOW_READER.
func (q *writeQueue) push(frame *[]byte, urgent, start, reserved bool) bool {
	n := len(*frame)
	if !reserved {
		q.c.cfg.Budget.Reserve(n)
	}
	q.mu.Lock()
	q.awaitWrittenLocked(n)
	if q.closing || q.queued+n > q.c.cfg.MaxQueuedBytes {
		overflow, queued := !q.closing, q.queued
		q.mu.Unlock()
		q.c.cfg.Budget.Release(n)
		putFrame(frame)
		if overflow {
			q.c.abortWith(ReasonSlowReader, slowReaderError(queued, n, q.c.cfg.MaxQueuedBytes))
		}
		return false
	}
	if urgent {
		q.urgent = appendFrame(q.urgent, frame)
	} else {
		q.normal = appendFrame(q.normal, frame)
	}
	q.addLocked(n)
	// Answers the read loop queues wait for its kick, unless they pile up:
	// large answers to many pipelined requests must not wait for the whole
	// batch (nor look like a slow reader).
	if start || q.queued >= quietLimit {
		q.startLocked()
	}
	q.mu.Unlock()
	return true
}

// awaitWrittenLocked waits while a frame of n bytes does not fit only
// because of the batch being written. Those bytes may already have reached
// the peer, whose next request can then be answered before the write
// returns: a peer at exactly the bound that reads everything must not be
// cut off for bytes it has read. The wait is bounded by the write's
// deadline; a write that fails frees the batch too.
func (q *writeQueue) awaitWrittenLocked(n int) {
	limit := q.c.cfg.MaxQueuedBytes
	for !q.closing && q.queued+n > limit && q.queued-q.writing+n <= limit {
		q.changed.Wait()
	}
}

// maxMerged bounds the frames that are copied into the spare room of the
// frame queued before them.
const maxMerged = 4 << 10

// appendFrame queues frame at the end of list. A small frame is copied into
// the spare capacity of the last queued buffer when it fits: many small
// answers (keepalives, errors) then share buffers instead of each holding
// a pooled one several times its size, so that the bytes counted against
// the queue bound are close to the memory held.
func appendFrame(list []*[]byte, frame *[]byte) []*[]byte {
	if k := len(list); k > 0 && len(*frame) <= maxMerged {
		last := list[k-1]
		if cap(*last)-len(*last) >= len(*frame) {
			*last = append(*last, *frame...)
			putFrame(frame)
			return list
		}
	}
	return append(list, frame)
}

// addLocked counts n more bytes held (negative when released).
func (q *writeQueue) addLocked(n int) {
	q.share.Load().Add(n)
	q.queued += n
	q.peak = max(q.peak, q.queued)
	q.full.Store(q.overHalfLocked())
}

// overHalfLocked reports whether more than half of MaxQueuedBytes is held:
// the one threshold both for raising full and for the read loop's wait.
func (q *writeQueue) overHalfLocked() bool {
	return q.queued > q.c.cfg.MaxQueuedBytes/2
}

// dropLocked releases frames that will not be written.
func (q *writeQueue) dropLocked(frames []*[]byte) {
	n := 0
	for _, f := range frames {
		n += len(*f)
		putFrame(f)
	}
	q.addLocked(-n)
	q.c.cfg.Budget.Release(n)
}

// chargeTo makes s the share the connection's bytes count in, moving what
// is held now from the share before, which it leaves.
func (q *writeQueue) chargeTo(s *Share) {
	q.mu.Lock()
	old := q.share.Swap(s)
	old.Add(-q.queued)
	s.Add(q.queued)
	q.mu.Unlock()
	old.Leave()
}

// finish stops the queue. With a final frame, the writer writes it after
// the queued frames (or instead of them, when dropQueued) and then closes
// the socket; without one the socket closes at once. What remains to be
// written must leave within the write timeout, or within finalWriteTimeout
// when hurry is set.
func (q *writeQueue) finish(final *[]byte, dropQueued, hurry bool) {
	q.mu.Lock()
	if q.closing {
		q.mu.Unlock()
		putFrame(final)
		return
	}
	q.closing = true
	grace := q.c.cfg.WriteTimeout
	if hurry || dropQueued {
		grace = min(grace, finalWriteTimeout)
	}
	by := time.Now().Add(grace)
	q.closeBy.Store(by.UnixNano())
	// A write already under way may be stuck on a peer that does not read.
	_ = q.nc.SetWriteDeadline(by)
	if dropQueued {
		q.dropLocked(q.urgent)
		q.dropLocked(q.normal)
		q.urgent, q.normal = nil, nil
	}
	if final == nil {
		q.closeLocked()
		q.mu.Unlock()
		return
	}
	// The final frame is sent whatever the limits: it is small (errors are
	// capped) and its bytes still count so that the gauge tells the truth.
	q.c.cfg.Budget.Reserve(len(*final))
	q.addLocked(len(*final))
	q.final = final
	q.startLocked()
	q.mu.Unlock()
}

// wait blocks until the writer has exited, then makes sure the socket is
// closed and queued buffers are released. No writer starts afterwards.
func (q *writeQueue) wait() {
	q.mu.Lock()
	q.closing = true
	for q.running {
		q.changed.Wait()
	}
	q.closeLocked()
	q.dropLocked(q.urgent)
	q.dropLocked(q.normal)
	if q.final != nil {
		q.dropLocked([]*[]byte{q.final})
	}
	q.urgent, q.normal, q.final = nil, nil, nil
	q.mu.Unlock()
}

func (q *writeQueue) closeLocked() {
	if !q.closed {
		q.closed = true
		_ = q.nc.Close()
	}
}

func (q *writeQueue) run() {
	// Requests finishing on other goroutines right now can still join the
	// first batch: one yield turns many small writes into one.
	if q.c.busy() {
		runtime.Gosched()
	}
	for {
		batch, last := q.next()
		if len(batch) == 0 {
			return // next has marked the writer gone
		}
		err := q.write(batch, last)
		q.written(batch)
		clear(batch)
		if err != nil || last {
			if err != nil {
				// The reason first: closing the socket wakes the read
				// loop, which would otherwise report a failed read.
				q.writeFailed(err)
			}
			q.exit()
			return
		}
	}
}

// written releases a batch that has left (or failed to), letting a read
// loop that waits for room go on.
func (q *writeQueue) written(batch []*[]byte) {
	q.mu.Lock()
	q.dropLocked(batch)
	q.writing = 0
	q.changed.Broadcast()
	q.mu.Unlock()
}

// writeFailed closes the connection after a failed write. A write that
// timed out means the peer stopped reading what it was sent: a slow
// reader. No _CloseReason follows, since part of a frame may be on the wire.
func (q *writeQueue) writeFailed(err error) {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		q.c.Log(zerolog.InfoLevel).Str("reason", ReasonSlowReader.String()).Msg("peer stopped reading; closing")
		q.c.closeWith(ReasonSlowReader, errSlowReader.WithDetails(err.Error()))
		return
	}
	q.c.closeWith(ReasonWriteFailed, err)
}

// exit closes the socket after the final frame or a failed write, and
// marks the writer gone.
func (q *writeQueue) exit() {
	q.mu.Lock()
	q.closeLocked()
	q.running = false
	q.changed.Broadcast()
	q.mu.Unlock()
}

// next takes the frames to write next: urgent ones first, then queued ones
// up to maxBatchBytes. When the queue is empty it returns the final frame of
// a closing connection (last = true), or nothing, marking the writer gone.
func (q *writeQueue) next() (batch []*[]byte, last bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	batch = append(q.batch[:0], q.urgent...)
	clear(q.urgent)
	q.urgent = q.urgent[:0]
	size, n := 0, 0
	for n < len(q.normal) && size < maxBatchBytes {
		size += len(*q.normal[n])
		n++
	}
	batch = append(batch, q.normal[:n]...)
	rest := copy(q.normal, q.normal[n:])
	clear(q.normal[rest:])
	q.normal = q.normal[:rest]
	q.batch = batch
	if len(batch) > 0 {
		q.writing = batchBytes(batch)
		return batch, false
	}
	if q.closing && q.final != nil {
		batch = append(batch, q.final)
		q.final = nil
		q.batch = batch
		q.writing = len(*batch[0])
		return batch, true
	}
	if q.closing {
		q.closeLocked()
	}
	q.running = false
	q.changed.Broadcast()
	return nil, false
}

func (q *writeQueue) write(frames []*[]byte, last bool) error {
	if err := q.armDeadline(last); err != nil {
		return err
	}
	total := batchBytes(frames)
	var err error
	switch {
	case len(frames) == 1:
		_, err = q.nc.Write(*frames[0])
	case q.vectored:
		iov := q.iov[:0]
		for _, f := range frames {
			iov = append(iov, *f)
		}
		q.iov = iov
		_, err = iov.WriteTo(q.nc)
		clear(q.iov[:cap(q.iov)])
	default:
		err = q.writeCoalesced(frames)
	}
	mt := q.c.cfg.Metrics
	mt.FramesSent.Add(float64(countFrames(frames)))
	mt.BytesSent.Add(float64(total))
	mt.WriteQueue.Observe(float64(total))
	return err
}

// armDeadline keeps every write under a deadline of at most the write
// timeout. It renews the deadline only when less than half of it is left,
// sparing a timer update per batch. Once the connection is closing, every
// write stays within the close's own bound, and the final frame within
// finalWriteTimeout as well.
func (q *writeQueue) armDeadline(last bool) error {
	if by := q.closeBy.Load(); by != 0 {
		d := time.Unix(0, by)
		if f := time.Now().Add(finalWriteTimeout); last && f.Before(d) {
			d = f
		}
		if q.deadline.Equal(d) {
			return nil
		}
		q.deadline = d
		return q.nc.SetWriteDeadline(d)
	}
	// Only a closing connection has a final frame: finish sets closeBy
	// before it queues one.
	now, timeout := time.Now(), q.c.cfg.WriteTimeout
	if q.deadline.Sub(now) >= timeout/2 {
		return nil
	}
	q.deadline = now.Add(timeout)
	return q.nc.SetWriteDeadline(q.deadline)
}

func batchBytes(frames []*[]byte) int {
	n := 0
	for _, f := range frames {
		n += len(*f)
	}
	return n
}

// countFrames counts the frames in buffers, where one buffer may hold
// several small frames back to back (appendFrame): the metric counts
// frames, not writes or buffers.
func countFrames(bufs []*[]byte) int {
	n := 0
	for _, f := range bufs {
		for b := *f; len(b) >= transport.FrameOverhead; n++ {
			b = b[min(len(b), transport.FrameOverhead+bodyLen(b)):]
		}
	}
	return n
}

// bodyLen reads the body length from the header of a frame the gateway
// built itself: its first 8 bytes are the length in hex.
func bodyLen(frame []byte) int {
	var n [4]byte
	_, _ = hex.Decode(n[:], frame[:8])
	return int(binary.BigEndian.Uint32(n[:]))
}

// writeCoalesced copies frames into one buffer so that a TLS connection
// sends them as few records in one write. next has bounded the batch
// already; the copy does not cut it again.
func (q *writeQueue) writeCoalesced(frames []*[]byte) error {
	buf := getFrame()
	defer putFrame(buf)
	b := (*buf)[:0]
	for _, f := range frames {
		b = append(b, *f...)
	}
	*buf = b
	_, err := q.nc.Write(b)
	return err
}

var framePool = sync.Pool{New: func() any {
	b := make([]byte, 0, 512)
	return &b
}}

// maxPooledFrame keeps rare huge responses from pinning memory in the pool.
const maxPooledFrame = 64 << 10

func getFrame() *[]byte {
	p := framePool.Get().(*[]byte)
	*p = (*p)[:0]
	return p
}

func putFrame(p *[]byte) {
	if p != nil && cap(*p) <= maxPooledFrame {
		framePool.Put(p)
	}
}

// Frame builders. Each returns a pooled buffer holding one complete frame.

func (c *Conn) frame(build func(dst []byte) []byte) (*[]byte, error) {
	p := getFrame()
	buf := transport.BeginFrame((*p)[:0])
	buf = build(buf)
	buf, err := transport.EndFrame(buf, 0, c.cfg.MaxMessageSize)
	*p = buf
	if err != nil {
		putFrame(p)
		return nil, err
	}
	return p, nil
}

// Senders. fromLoop marks frames produced by the read loop itself: they
// wait for the loop to kick the writer (see writeQueue.push).

func (c *Conn) sendResult(rawID, result []byte, fromLoop bool) {
	p, err := c.frame(func(dst []byte) []byte { return transport.AppendResult(dst, rawID, result) })
	if err != nil {
		c.sendError(rawID, c.tooLarge(err), fromLoop)
		return
	}
	c.pushResult(rawID, p, fromLoop)
}

// pushResult queues a result when the gateway-wide budget has room for it.
// Otherwise the result is dropped and the caller told to retry: answers
// that nobody reads must not grow the heap past the budget.
func (c *Conn) pushResult(rawID []byte, p *[]byte, fromLoop bool) {
	if s := c.w.share.Load(); !s.Fits(len(*p)) {
		putFrame(p)
		c.cfg.Metrics.BudgetRefusals.WithLabelValues(metrics.FrontFramed).Inc()
		c.sendError(rawID, shareFullError(s), fromLoop)
		return
	}
	if !c.cfg.Budget.TryReserve(len(*p)) {
		putFrame(p)
		c.cfg.Metrics.BudgetRefusals.WithLabelValues(metrics.FrontFramed).Inc()
		c.sendError(rawID, errOverloadedBudget, fromLoop)
		return
	}
	c.w.push(p, false, !fromLoop, true)
}

// answerKeepalive queues the answer to a peer's _Keepalive ahead of every
// response; the read loop sends it when its input is drained.
func (c *Conn) answerKeepalive(rawID []byte) {
	p, err := c.frame(func(dst []byte) []byte { return transport.AppendResult(dst, rawID, transport.EmptyObject) })
	if err == nil {
		c.w.push(p, true, false, false)
	}
}

func (c *Conn) sendError(rawID []byte, e *transport.Error, fromLoop bool) {
	p, err := c.frame(func(dst []byte) []byte { return transport.AppendErrorResponse(dst, rawID, e) })
	if err != nil {
		// Cannot happen: errors are capped below MinMessageSize and ids
		// below MaxIDLen.
		c.Log(zerolog.ErrorLevel).Err(err).Msg("error response does not fit a frame")
		return
	}
	c.w.push(p, false, !fromLoop, false)
}

func (c *Conn) sendResponse(rawID []byte, res any, err error, fromLoop bool) {
	if err != nil {
		c.sendError(rawID, wireError(err), fromLoop)
		return
	}
	if a, ok := res.(transport.Appender); ok {
		p, ferr := c.frame(func(dst []byte) []byte { return transport.AppendResultFunc(dst, rawID, a.AppendJSON) })
		if ferr != nil {
			c.sendError(rawID, c.tooLarge(ferr), fromLoop)
			return
		}
		c.pushResult(rawID, p, fromLoop)
		return
	}
	obj, encErr := transport.MarshalObject(res)
	if encErr != nil {
		c.Log(zerolog.ErrorLevel).Err(encErr).Msg("cannot encode handler result")
		c.sendError(rawID, transport.ErrInternal, fromLoop)
		return
	}
	c.sendResult(rawID, obj, fromLoop)
}

func (c *Conn) closeReasonFrame(e *transport.Error) *[]byte {
	p, err := c.frame(func(dst []byte) []byte { return transport.AppendCloseReason(dst, e) })
	if err != nil {
		return nil
	}
	return p
}

func (c *Conn) tooLarge(err error) *transport.Error {
	var fe *transport.FrameError
	details := err.Error()
	if errors.As(err, &fe) {
		details = "the result of " + strconv.Itoa(fe.Length) + " bytes exceeds the message size limit of " +
			strconv.Itoa(fe.Limit) + " bytes"
		if c.cfg.TooLargeHint != "" {
			details += "; " + c.cfg.TooLargeHint
		}
	}
	return transport.AppError(transport.StringResponseTooLarge, "The response is larger than the message size limit.").
		WithDetails(details)
}
