package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// readRequest reads a request's line and headers under the run's bounds:
// it waits for one of the run's header readers, reads at most
// MaxHeaderBytes, all within RequestTimeout of the accept, and charges
// what the request used towards the run's bytes sent. used is that
// charge; ok false leaves the refusal in st.
func (r *Run) readRequest(c net.Conn, st *conn) (req *http.Request, br *bufio.Reader, used int64, ok bool) {
	deadline := st.start.Add(r.p.cfg.RequestTimeout)
	release, ok := r.awaitReader(deadline)
	if !ok {
		st.reason, st.detail = ReasonBadRequest, fmt.Sprintf("no request read within %s: the run had %d requests being read",
			r.p.cfg.RequestTimeout, cap(r.readers))
		return nil, nil, 0, false
	}
	defer release()
	lim := &headerLimit{r: c, left: r.p.cfg.MaxHeaderBytes}
	br = bufio.NewReader(lim)
	_ = c.SetReadDeadline(deadline)
	req, err := http.ReadRequest(br)
	_ = c.SetReadDeadline(time.Time{})
	// What bufio read ahead is the body or the tunnel's first bytes,
	// charged as they are relayed.
	used = lim.read - int64(br.Buffered())
	lim.lift()
	if !r.charge(used) {
		st.reason, st.detail = ReasonLimit, errByteCap.Error()
		return nil, nil, 0, false
	}
	switch {
	case err != nil && (errors.Is(err, errHeaderTooLarge) || lim.left == 0):
		// A request cut at the limit may fail to parse before it meets
		// the limit's error: either way it did not fit.
		st.reason, st.detail = ReasonHeaderTooLarge, fmt.Sprintf("the request line and headers pass %d bytes", r.p.cfg.MaxHeaderBytes)
		return nil, nil, 0, false
	case err != nil:
		st.reason, st.detail = ReasonBadRequest, "unreadable proxy request"
		return nil, nil, 0, false
	}
	return req, br, used, true
}

// charge counts n bytes the run sent that are not relayed as they are,
// and closes the run's connections once they pass its cap.
func (r *Run) charge(n int64) bool {
	if r.up.Add(n) > r.p.cfg.MaxBytes {
		r.closeAll()
		return false
	}
	return true
}

// awaitReader takes one of the run's header readers, waiting until
// deadline or the end of the run for one to be free.
func (r *Run) awaitReader(deadline time.Time) (release func(), ok bool) {
	release = func() { <-r.readers }
	select {
	case r.readers <- struct{}{}:
		return release, true
	default:
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case r.readers <- struct{}{}:
		return release, true
	case <-t.C:
	case <-r.done:
	}
	return nil, false
}

// headerLimit lets at most left bytes through until lifted: a request
// whose line and headers do not end within them cannot be read, instead
// of growing a line in memory for as long as the run sends one.
type headerLimit struct {
	r      io.Reader
	left   int64
	read   int64 // while limited
	lifted bool
}

func (l *headerLimit) Read(p []byte) (int, error) {
	if l.lifted {
		return l.r.Read(p)
	}
	if l.left <= 0 {
		return 0, errHeaderTooLarge
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	l.read += int64(n)
	return n, err
}

func (l *headerLimit) lift() { l.lifted = true }
