package httpfront

import (
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/transport"
)

// rejectGrace bounds what a refused HTTP connection may cost: the time to
// write the 503 and to drain what the client sent, so that closing does
// not reset the connection before the client reads the answer.
const rejectGrace = 2 * time.Second

// maxRejecting bounds the refused connections being answered at once; past
// it a refused connection is closed without an answer, so a flood of
// connections costs no more than this many goroutines.
const maxRejecting = 64

// LimitListener caps the open connections of the HTTP front door at
// limit (0: no cap). A connection past the cap is answered at once with 503
// and an OVERLOADED body, counted, and closed; it never reaches the HTTP
// server, so it holds no request buffers.
func LimitListener(ln net.Listener, limit int, m *metrics.Metrics) net.Listener {
	if limit <= 0 {
		return ln
	}
	body := responseBody(nullID, nil, transport.AppError(transport.StringOverloaded, "The server is at its HTTP connection limit.").
		WithRetryHint(session.RetryConnLimit))
	reply := []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n" +
		"Connection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + string(body))
	return &limitListener{Listener: ln, max: int64(limit), reply: reply, metrics: m}
}

type limitListener struct {
	net.Listener
	max     int64
	open    atomic.Int64
	refused atomic.Int64 // connections being answered 503
	reply   []byte
	metrics *metrics.Metrics
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &countedConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		l.metrics.HTTPRefused.WithLabelValues("connection_limit").Inc()
		if l.refused.Add(1) > maxRejecting {
			l.refused.Add(-1)
			_ = c.Close()
			continue
		}
		go l.reject(c)
	}
}

// reject answers 503, then reads and drops what the client sends until it
// closes or the grace ends.
func (l *limitListener) reject(c net.Conn) {
	defer l.refused.Add(-1)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(rejectGrace))
	if _, err := c.Write(l.reply); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	var buf [512]byte
	for {
		if _, err := c.Read(buf[:]); err != nil {
			return
		}
	}
}

// countedConn gives its slot back once, however often it is closed.
type countedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}
