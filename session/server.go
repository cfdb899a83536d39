package session

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/transport"
)

// Server accepts framed connections on any number of listeners and serves
// them with one Handler.
type Server struct {
	cfg     Config
	handler Handler

	nextID atomic.Uint64

	mu        sync.Mutex // guards the fields below
	listeners map[net.Listener]struct{}
	conns     map[*Conn]struct{}
	shutting  bool
	allGone   chan struct{} // closed when shutting and no connection is left

	wg sync.WaitGroup // accept loops and connection goroutines
}

// NewServer validates cfg (after WithDefaults) and returns a server.
func NewServer(cfg Config, h Handler) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, handler: h,
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[*Conn]struct{}),
		allGone:   make(chan struct{}),
	}
	return s, nil
}

// Serve accepts connections on ln until Shutdown or Close, naming them
// after listener ("tcp", "tls") in logs and metrics. Transient accept errors
// (such as running out of file descriptors) are retried with backoff.
func (s *Server) Serve(ln net.Listener, listener string) error {
	s.mu.Lock()
	if s.shutting {
		s.mu.Unlock()
		_ = ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isShutting() || errors.Is(err, net.ErrClosed) {
				return ErrServerClosed
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.cfg.Logger.Warn().Err(err).Dur("retry_in", backoff).Msg("accept failed")
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		s.ServeConn(nc, listener)
	}
}

func (s *Server) isShutting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shutting
}

// ServeConn serves one already accepted connection.
func (s *Server) ServeConn(nc net.Conn, listener string) {
	mt := s.cfg.Metrics
	s.mu.Lock()
	if s.shutting {
		s.mu.Unlock()
		_ = nc.Close()
		return
	}
	if s.cfg.MaxConnections > 0 && len(s.conns) >= s.cfg.MaxConnections {
		s.wg.Add(1)
		s.mu.Unlock()
		mt.ConnectionsRejected.WithLabelValues(listener, ReasonOverloaded.String()).Inc()
		go s.reject(nc)
		return
	}
	// Each connection cancels its own requests when it closes (Shutdown
	// aborts every connection), so no shared parent context is needed: one
	// would hold an entry per connection.
	c := newConn(nc, &s.cfg, s.handler, listener, s.nextID.Add(1), context.Background())
	c.server = s
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	mt.ConnectionsAccepted.WithLabelValues(listener).Inc()
	mt.ConnectionsActive.WithLabelValues(listener).Inc()
	c.Log(zerolog.DebugLevel).Msg("connection accepted")
	go c.serve() // the connection's finish calls s.wg.Done, on whichever goroutine ends its loop
}

// reject tells a connection over the limit why it is closed. The write has
// a short deadline, so a peer that does not read cannot hold it up.
func (s *Server) reject(nc net.Conn) {
	defer s.wg.Done()
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(finalWriteTimeout))
	if tc, ok := nc.(*tls.Conn); ok {
		if err := tc.Handshake(); err != nil {
			return
		}
	}
	frame, err := transport.AppendFrame(nil, transport.AppendCloseReason(nil, overloadedConnsError(s.cfg.MaxConnections)), s.cfg.MaxMessageSize)
	if err == nil {
		_, _ = nc.Write(frame)
	}
}

// forget deregisters a finished connection.
func (s *Server) forget(c *Conn, reason CloseReason) {
	defer s.wg.Done()
	mt := s.cfg.Metrics
	mt.ConnectionsActive.WithLabelValues(c.listener).Dec()
	mt.ConnectionsClosed.WithLabelValues(c.listener, reason.String()).Inc()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	if s.shutting && len(s.conns) == 0 {
		s.closeAllGoneLocked()
	}
}

func (s *Server) closeAllGoneLocked() {
	select {
	case <-s.allGone:
	default:
		close(s.allGone)
	}
}

// Connections returns the number of open connections.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Shutdown stops accepting, lets every connection finish its in-flight
// requests (new ones are refused with SERVER_SHUTDOWN), then closes each with
// a SERVER_SHUTDOWN _CloseReason. When ctx ends first, every request still
// in flight is answered with SERVER_SHUTDOWN, its context canceled, and each
// connection aborted; Shutdown then waits only for those answers to be
// written, which takes at most finalWriteTimeout, not for handlers that
// ignore their context.
func (s *Server) Shutdown(ctx context.Context) error {
	conns := s.stopAccepting()
	for _, c := range conns {
		c.drain()
	}
	var err error
	select {
	case <-s.allGone:
	case <-ctx.Done():
		err = ctx.Err()
		for _, c := range conns {
			c.expire()
		}
	}
	s.wg.Wait()
	if err == nil {
		for _, c := range conns {
			c.handlers.Wait()
		}
	}
	return err
}

// Close closes every listener and connection at once, without waiting for
// in-flight requests.
func (s *Server) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = s.Shutdown(ctx)
	return nil
}

func (s *Server) stopAccepting() []*Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shutting = true
	for ln := range s.listeners {
		_ = ln.Close()
	}
	conns := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	if len(s.conns) == 0 {
		s.closeAllGoneLocked()
	}
	return conns
}

// expire ends a connection whose drain ran out of time: every request still
// running is answered with SERVER_SHUTDOWN at once (a late result is then
// dropped), and the connection is aborted with SERVER_SHUTDOWN.
func (c *Conn) expire() {
	c.expired.Store(true)
	c.mu.Lock()
	c.draining = true
	ids := make([][]byte, 0, len(c.calls))
	for _, id := range c.calls {
		ids = append(ids, id)
	}
	clear(c.calls)
	c.mu.Unlock()
	e := errShutdown.WithDetails("the call did not finish within the server's drain timeout; it was canceled")
	for _, id := range ids {
		c.sendError(id, e, false)
	}
	c.abortWith(ReasonShutdown, shutdownError(c.cfg.DrainTimeout, true))
}

// drain refuses new requests and closes the connection once the in-flight
// ones have been answered.
func (c *Conn) drain() {
	c.mu.Lock()
	c.draining = true
	idle := c.inflight == 0
	c.mu.Unlock()
	if idle {
		c.abortWith(ReasonShutdown, shutdownError(c.cfg.DrainTimeout, false))
	}
}
