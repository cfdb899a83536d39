package main

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skillgate/skillgate/transport"
)

// loadConn drives one connection: a writer goroutine keeps up to Depth
// requests in flight, writing every free window slot in one write; the
// reader goroutine matches answers to slots by id, records latencies, and
// hands freed slots back in batches, once its input is drained, so that
// the writer wakes once per batch rather than once per answer.
type loadConn struct {
	*wireConn
	tpl   *template
	rs    *runState
	quota int64 // requests left to send; -1: no limit (writer-owned)

	sent     []atomic.Int64 // send time of the request in each slot (ns since rs.base)
	free     slotQueue
	inflight atomic.Int64
	failed   atomic.Bool // set once by the first failure, which closes dead
	dead     chan struct{}
	lastAt   atomic.Int64 // time of the last measured answer

	seq  uint64 // writer-owned
	wbuf []byte // writer-owned
	werr error  // writer-owned until writerDone is closed

	// reader-owned until readerDone is closed
	hist       Histogram
	n, errs    uint64
	keepalives uint64
	codes      map[string]uint64
	err        error
	writerDone chan struct{}
	readerDone chan struct{}
}

func newLoadConn(wc *wireConn, tpl *template, rs *runState, depth int, quota int64) *loadConn {
	c := &loadConn{
		wireConn: wc, tpl: tpl, rs: rs, quota: quota,
		sent:       make([]atomic.Int64, depth),
		codes:      map[string]uint64{},
		dead:       make(chan struct{}),
		writerDone: make(chan struct{}),
		readerDone: make(chan struct{}),
	}
	c.free.wake = make(chan struct{}, 1)
	for i := range depth {
		c.free.slots = append(c.free.slots, uint32(i))
	}
	return c
}

// slotQueue hands freed window slots from the reader to the writer.
type slotQueue struct {
	mu    sync.Mutex
	slots []uint32
	wake  chan struct{} // signaled when slots were added
}

func (q *slotQueue) put(s []uint32) {
	q.mu.Lock()
	q.slots = append(q.slots, s...)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *slotQueue) take(dst []uint32) []uint32 {
	q.mu.Lock()
	dst = append(dst, q.slots...)
	q.slots = q.slots[:0]
	q.mu.Unlock()
	return dst
}

func (c *loadConn) writeLoop() {
	defer close(c.writerDone)
	var slots []uint32
	for c.quota != 0 {
		slots = c.free.take(slots[:0])
		if len(slots) == 0 {
			select {
			case <-c.free.wake:
				continue
			case <-c.rs.stop:
				return
			case <-c.dead:
				return
			}
		}
		select {
		case <-c.rs.stop:
			return
		case <-c.dead:
			return
		default:
		}
		if c.quota > 0 && int64(len(slots)) > c.quota {
			slots = slots[:c.quota]
		}
		if !c.send(slots) {
			return
		}
	}
}

// send writes one request per slot in one write.
func (c *loadConn) send(slots []uint32) bool {
	now := c.rs.now()
	buf := c.wbuf[:0]
	for _, s := range slots {
		c.sent[s].Store(now)
		c.seq++
		buf = c.tpl.appendFrame(buf, c.seq, s)
	}
	c.wbuf = buf
	if c.quota > 0 {
		c.quota -= int64(len(slots))
	}
	c.inflight.Add(int64(len(slots)))
	if err := c.write(buf); err != nil {
		if c.markDead() && !closedOnPurpose(&c.rs.closing, err) {
			c.werr = err
		}
		return false
	}
	return true
}

// markDead closes the connection on its first failure and reports whether
// this call was that first failure.
func (c *loadConn) markDead() bool {
	if c.failed.Swap(true) {
		return false
	}
	close(c.dead)
	_ = c.nc.Close()
	return true
}

func (c *loadConn) readLoop() {
	defer close(c.readerDone)
	var freed []uint32
	for {
		m, ka, err := c.next()
		if err != nil {
			c.failRead(err)
			return
		}
		switch {
		case ka:
			c.keepalives++
		case m.Kind == transport.KindResult || m.Kind == transport.KindError:
			slot, ok := parseSlot(m.ID)
			if !ok || int(slot) >= len(c.sent) {
				c.failRead(errBadResponse)
				return
			}
			c.observe(m, slot)
			freed = append(freed, slot)
		default:
			if err := closeErr(m); err != nil {
				c.failRead(err)
				return
			}
		}
		if len(freed) > 0 && c.fr.Buffered() == 0 {
			c.inflight.Add(-int64(len(freed)))
			c.free.put(freed)
			freed = freed[:0]
		}
	}
}

// failRead records a reader failure; the reader owns c.err.
func (c *loadConn) failRead(err error) {
	if c.markDead() && !closedOnPurpose(&c.rs.closing, err) {
		c.err = err
	}
}

// closedOnPurpose reports whether err is only the end of a connection
// this tool is closing itself (closing is set before the close): a reader
// or writer failing for another reason at that moment, a _CloseReason or a
// reset from the gateway, is still a failure to report.
func closedOnPurpose(closing *atomic.Bool, err error) bool {
	return closing.Load() && errors.Is(err, net.ErrClosed)
}

// observe records an answer received during the measured window.
func (c *loadConn) observe(m *transport.Message, slot uint32) {
	if c.rs.phase.Load() != phaseMeasure {
		return
	}
	now := c.rs.now()
	c.hist.Record(time.Duration(now - c.sent[slot].Load()))
	c.lastAt.Store(now)
	c.n++
	if m.Kind == transport.KindError {
		c.errs++
		c.codes[m.Error.EffectiveCode()]++
	}
}
