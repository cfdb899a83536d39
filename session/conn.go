package session

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/transport"
)

// MaxIDLen bounds request ids: every response echoes the id, and a response
// must fit the message size limit whatever the id.
const MaxIDLen = 1024

type connState uint8

const (
	stateNew          connState = iota // not initialized
	stateInitializing                  // an initialization request is being served
	stateReady                         // initialized; application methods are served
)

// Conn is one framed JSON-RPC connection. The same type serves both sides:
// a server's accepted connections and a client's dialed one.
//
// One goroutine reads (the serve loop); at most one writer goroutine, started
// on demand, owns writes to the socket; requests run on goroutines of their
// own. All mutable state is guarded by mu (protocol state) or wmu (the write
// queue).
type Conn struct {
	id       uint64
	nc       net.Conn
	listener string
	remote   string
	cfg      *Config
	handler  Handler   // nil: no application methods
	bound    ConnState // the handler's state of this connection; set once in serve
	inline   Inliner   // handler's inline methods, when it declares any
	// inlineReq is reused by every inline request: only the read loop,
	// which runs one at a time, uses it.
	inlineReq Request
	server    *Server // nil on the client side
	started   time.Time

	ctx    context.Context // canceled when the connection closes
	cancel context.CancelFunc

	fr transport.Reader
	// heard is when the peer was last heard from (a frame other than the
	// answer to our own probe), in nanoseconds since started on the
	// monotonic clock: the keepalive probe goes out one interval after it.
	heard atomic.Int64
	// kaInterval is the keepalive interval of this connection: the
	// configured one less its jitter.
	kaInterval time.Duration
	moveLoop   atomic.Bool // the read loop should move to a fresh goroutine before it waits
	expired    atomic.Bool // the drain deadline passed: the last frames must leave quickly
	timer      *time.Timer // keepalive schedule
	initT      *time.Timer // initialization deadline (server side)

	w writeQueue

	mu           sync.Mutex // guards the fields below
	state        connState
	initFailures int
	inflight     int
	ids          idWindow
	calls        map[uint64][]byte // raw ids of requests running on goroutines, by id hash
	nextID       uint64
	pending      map[string]chan callResult // outbound calls awaiting a response
	ka           keepaliveState
	draining     bool
	reason       CloseReason // first reason wins
	closeErr     error
	peerClose    *transport.Error // the error of the peer's first _CloseReason

	handlers sync.WaitGroup
	done     chan struct{} // closed when the serve loop has finished
}

func newConn(nc net.Conn, cfg *Config, h Handler, listener string, id uint64, parent context.Context) *Conn {
	c := &Conn{
		id: id, nc: nc, listener: listener, cfg: cfg, handler: h,
		remote:     nc.RemoteAddr().String(),
		started:    time.Now(),
		kaInterval: jittered(cfg.KeepaliveInterval),
		done:       make(chan struct{}),
	}
	c.ctx, c.cancel = context.WithCancel(parent)
	c.inline, _ = h.(Inliner)
	c.fr.Reset(nc, cfg.MaxMessageSize)
	c.fr.SetFrameTimeout(nc, cfg.FrameTimeout)
	c.ids.size = cfg.RecentIDs
	c.w.init(c, nc)
	if cfg.Budget != nil {
		// Until Initialize names who the peer is, its bytes count in the
		// share of every connection that has not initialized.
		c.w.share.Store(cfg.Budget.Join(""))
	}
	return c
}

// ID returns the connection's number, unique within the process.
func (c *Conn) ID() uint64 { return c.id }

// RemoteAddr returns the peer's address.
func (c *Conn) RemoteAddr() string { return c.remote }

// Listener names the listener that accepted the connection ("tcp", "tls"),
// or "client" for a dialed one.
func (c *Conn) Listener() string { return c.listener }

// Log starts a log event at level on the configured logger, tagged with the
// connection's id, remote address and listener. Connections keep no logger
// of their own: tagging events as they are written costs nothing while
// the connection is idle.
func (c *Conn) Log(level zerolog.Level) *zerolog.Event {
	return c.Tag(c.cfg.Logger.WithLevel(level))
}

// Tag adds the connection's identifying fields to a log event.
func (c *Conn) Tag(e *zerolog.Event) *zerolog.Event {
	return e.Uint64("conn", c.id).Str("remote", c.remote).Str("listener", c.listener)
}

// TLSState returns the TLS state of a TLS connection, or nil.
func (c *Conn) TLSState() *tls.ConnectionState {
	if tc, ok := c.nc.(*tls.Conn); ok {
		st := tc.ConnectionState()
		return &st
	}
	return nil
}

// State returns the value the Handler bound to the connection (see
// Binder), or nil. It is set before the first request is read and never
// changes.
func (c *Conn) State() ConnState { return c.bound }

// Done is closed once the connection has closed.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the connection closed (nil while open).
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeErr
}

// Reason returns why the connection closed (ReasonNone while open).
func (c *Conn) Reason() CloseReason {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reason
}

// serve runs the read loop until the connection ends.
func (c *Conn) serve() {
	if b, ok := c.handler.(Binder); ok {
		c.bound = b.Bind(c) // off the accept loop, before any request
	}
	if err := c.handshake(); err != nil {
		c.Log(zerolog.InfoLevel).Err(err).Msg("TLS handshake failed")
		c.closeWith(ReasonHandshake, err)
		c.finish()
		return
	}
	c.startTimers()
	c.readLoop()
}

// readLoop reads and routes frames until the connection ends.
//
// Routing grows the goroutine's stack, and the runtime keeps a grown stack
// for as long as the goroutine waits, which on thousands of idle
// connections is most of their memory. So when the keepalive timer finds a
// connection idle it asks the loop to move: before its next wait the loop
// continues on a fresh, small goroutine. That happens at most once per
// keepalive interval, and never on a busy connection.
func (c *Conn) readLoop() {
	var frames, bytes int // counted locally, added to the shared metrics once per batch
	for {
		if c.fr.Buffered() == 0 {
			c.w.kick() // about to wait for input: send what the loop queued
			c.countReceived(&frames, &bytes)
			if c.moveLoop.Swap(false) {
				go c.readLoop()
				return
			}
		} else if !c.fr.FrameBuffered() {
			// Only part of the next frame is here, and the rest may be
			// slow to come (a large upload): what the loop queued, such
			// as a keepalive answer, must not wait for it.
			c.w.kick()
		}
		if c.w.full.Load() {
			c.w.waitRoom()
		}
		n, ok := c.readOne()
		if n > 0 {
			frames, bytes = frames+1, bytes+n
		}
		if !ok || c.Reason() != ReasonNone {
			// Once the connection is ending nothing more is read: a request
			// pipelined behind the cause gets no answer of its own.
			c.countReceived(&frames, &bytes)
			c.finish()
			return
		}
	}
}

// countReceived adds a batch's frames and bytes to the shared counters:
// one update a batch keeps the metrics' cache lines from bouncing between
// cores on every frame.
func (c *Conn) countReceived(frames, bytes *int) {
	if *frames > 0 {
		c.cfg.Metrics.FramesReceived.Add(float64(*frames))
		c.cfg.Metrics.BytesReceived.Add(float64(*bytes))
		*frames, *bytes = 0, 0
	}
}

// readOne reads, decodes and routes one frame. It returns the frame's size
// on the wire (0 when none was read) and false when the connection has
// ended.
func (c *Conn) readOne() (int, bool) {
	body, err := c.fr.ReadFrame()
	if err != nil {
		c.readFailed(err)
		return 0, false
	}
	size := len(body) + transport.FrameOverhead
	var m transport.Message
	if err := transport.Decode(body, &m); err != nil {
		c.abortWith(reasonForDecode(err), transport.AbortError(err))
		return size, false
	}
	probeAnswer, e := c.route(&m)
	if e != nil {
		c.abortWith(ReasonInvalidMessage, e)
		return size, false
	}
	// The answer to our own probe is no sign of the peer's activity:
	// counting it would put the next probe off.
	if !probeAnswer {
		c.heard.Store(int64(time.Since(c.started)))
	}
	return size, true
}

// handshake completes a server-side TLS handshake within the configured
// time, before any frame is read.
func (c *Conn) handshake() error {
	tc, ok := c.nc.(*tls.Conn)
	if !ok || tc.ConnectionState().HandshakeComplete {
		return nil
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.HandshakeTimeout)
	defer cancel()
	// The handshake needs several KiB of stack. Run on the read loop, it
	// would leave that stack behind for the connection's whole life.
	done := make(chan error, 1)
	go func() { done <- tc.HandshakeContext(ctx) }()
	return <-done
}

func reasonForCode(code int32) CloseReason {
	if code == transport.CodeParseError {
		return ReasonParseError
	}
	return ReasonInvalidMessage
}

func reasonForDecode(err error) CloseReason {
	var ie *transport.InvalidMessageError
	if errors.As(err, &ie) {
		return ReasonInvalidMessage
	}
	return ReasonParseError
}

func (c *Conn) readFailed(err error) {
	var fe *transport.FrameError
	switch {
	case errors.As(err, &fe) && fe.Kind == transport.FrameTimeout:
		c.abortWith(ReasonFrameTimeout, transport.AbortError(err))
	case errors.As(err, &fe), errors.Is(err, io.ErrUnexpectedEOF):
		c.abortWith(ReasonParseError, transport.AbortError(err))
	case errors.Is(err, io.EOF):
		c.closeWith(ReasonPeerClosed, nil)
	default:
		// The socket failed or was closed by this side: nothing can be sent.
		c.closeWith(ReasonReadFailed, err)
	}
}

// route handles one decoded message and reports whether it answered this
// side's keepalive probe. A non-nil error aborts the connection.
func (c *Conn) route(m *transport.Message) (probeAnswer bool, e *transport.Error) {
	switch m.Kind {
	case transport.KindRequest:
		return false, c.onRequest(m)
	case transport.KindNotification:
		return false, c.onNotification(m)
	default:
		return c.onResponse(m), nil
	}
}

func invalid(details string) *transport.Error {
	return transport.NewError(transport.CodeInvalidRequest, "Invalid request.").WithDetails(details)
}

func (c *Conn) onRequest(m *transport.Message) *transport.Error {
	switch string(m.Method) {
	case transport.MethodCloseReason, transport.MethodError, transport.MethodInfo:
		return invalid(string(m.Method) + " must be sent as a notification")
	}
	if len(m.ID) > MaxIDLen {
		return invalid("request id is longer than the limit of " + strconv.Itoa(MaxIDLen) + " bytes")
	}
	h := hashID(m.ID)
	c.mu.Lock()
	if c.ids.seen(h) {
		c.mu.Unlock()
		return invalid("request id " + quote(m.ID) + " was already used on this connection")
	}
	if m.IsMethod(transport.MethodKeepalive) {
		c.ids.remember(h)
		c.mu.Unlock()
		c.answerKeepalive(m.RawID)
		return nil
	}
	refusal := c.admitLocked(m)
	if refusal != nil {
		c.ids.remember(h)
		c.mu.Unlock()
		c.sendError(m.RawID, refusal, true)
		return nil
	}
	c.ids.begin(h)
	c.inflight++
	c.handlers.Add(1)
	c.mu.Unlock()
	if c.isInit(m) {
		// The connection's next messages may depend on the outcome, so
		// Initialize completes on the read loop before anything later is
		// read: pipelined calls see the initialized session, and pipelined
		// attempts are answered in order.
		req := &Request{Method: methodName(m.Method), Params: bytes.Clone(m.Params), Conn: c, rawID: bytes.Clone(m.RawID)}
		c.complete(req, h, true)
		return nil
	}
	if c.inline != nil && c.inline.Inline(m.Method) {
		// Params alias the frame body: valid while the handler runs here.
		req := &c.inlineReq
		*req = Request{Method: methodName(m.Method), Params: m.Params, Conn: c, rawID: m.RawID}
		c.complete(req, h, true)
		*req = Request{}
		return nil
	}
	req := &Request{Method: methodName(m.Method), Params: bytes.Clone(m.Params), Conn: c, rawID: bytes.Clone(m.RawID)}
	c.mu.Lock()
	if c.calls == nil {
		c.calls = make(map[uint64][]byte)
	}
	c.calls[h] = req.rawID
	c.mu.Unlock()
	go c.complete(req, h, false)
	return nil
}

// isInit reports whether m is the initialization request.
func (c *Conn) isInit(m *transport.Message) bool {
	return c.cfg.InitMethod != "" && m.IsMethod(c.cfg.InitMethod)
}

// admitLocked decides whether a request may run, returning the error to
// answer it with otherwise.
func (c *Conn) admitLocked(m *transport.Message) *transport.Error {
	init := c.isInit(m)
	switch {
	case c.reason != ReasonNone:
		return errShutdown
	case c.draining:
		return errShutdown
	case c.handler == nil:
		return transport.ErrMethodNotFound
	case init && c.state != stateNew:
		return transport.AppError(transport.StringAlreadyInitialized, "The connection is already initialized.")
	case c.cfg.InitMethod != "" && !init && c.state != stateReady:
		return transport.ErrMethodNotFound.WithDetails("call " + c.cfg.InitMethod + " first")
	case c.inflight >= c.cfg.MaxInflight:
		return errOverloadedCalls
	case c.cfg.Budget.Full():
		c.cfg.Metrics.BudgetRefusals.WithLabelValues(metrics.FrontFramed).Inc()
		return errOverloadedBudget
	case c.w.share.Load().Full():
		c.cfg.Metrics.BudgetRefusals.WithLabelValues(metrics.FrontFramed).Inc()
		return shareFullError(c.w.share.Load())
	}
	if init {
		c.state = stateInitializing
	}
	return nil
}

// complete runs a request's handler and answers it, on its own goroutine
// or, for methods the handler declares inline, on the read loop.
func (c *Conn) complete(req *Request, h uint64, inline bool) {
	rawID := req.rawID
	defer c.handlers.Done()
	res, err := c.callHandler(req)
	init := c.cfg.InitMethod != "" && req.Method == c.cfg.InitMethod
	c.mu.Lock()
	c.inflight--
	c.ids.end(h)
	_, unanswered := c.calls[h]
	delete(c.calls, h)
	// A call that outlived the drain deadline has been answered already.
	answered := !inline && !unanswered
	failedInits := 0
	if init {
		c.state, failedInits = c.initOutcomeLocked(err)
	}
	drained := c.draining && c.inflight == 0
	c.mu.Unlock()
	if init && err == nil {
		c.dropInitTimer()
		c.chargeOwner()
	}
	var abort *Abort
	if errors.As(err, &abort) {
		c.abortWith(reasonForCode(abort.Err.Code), abort.Err)
		return
	}
	if answered {
		return
	}
	c.sendResponse(rawID, res, err, inline)
	switch {
	case failedInits >= c.cfg.MaxInitFailures:
		c.abortWith(ReasonInitFailed, initFailedError(wireError(err), c.cfg.InitMethod, failedInits))
	case drained:
		c.abortWith(ReasonShutdown, shutdownError(c.cfg.DrainTimeout, false))
	}
}

// chargeOwner counts the connection's bytes, from now on, in the share of
// the owner its handler names, once initialization has established it.
func (c *Conn) chargeOwner() {
	o, ok := c.bound.(BudgetOwner)
	if ok && c.cfg.Budget != nil {
		c.w.chargeTo(c.cfg.Budget.Join(o.BudgetOwner()))
	}
}

func (c *Conn) initOutcomeLocked(err error) (connState, int) {
	if err == nil {
		return stateReady, 0
	}
	c.initFailures++
	return stateNew, c.initFailures
}

func (c *Conn) callHandler(req *Request) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.Log(zerolog.ErrorLevel).Str("method", req.Method).Interface("panic", p).Msg("handler panicked")
			c.cfg.Metrics.Panics.Inc()
			res, err = nil, transport.ErrInternal
		}
	}()
	return c.handler.Handle(c.ctx, req)
}

// busy reports whether requests are being served on the connection.
func (c *Conn) busy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inflight > 0
}

// wireError converts a handler error to its wire form.
func wireError(err error) *transport.Error {
	var e *transport.Error
	if errors.As(err, &e) {
		return e
	}
	return transport.ErrInternal
}

func (c *Conn) onNotification(m *transport.Message) *transport.Error {
	name := string(m.Method)
	switch name {
	case transport.MethodKeepalive:
		return invalid("_Keepalive must be sent as a request with an id")
	case transport.MethodCloseReason, transport.MethodError:
		c.logPeerError(name, m.Params)
	case transport.MethodInfo:
		logParams(c.Log(zerolog.InfoLevel).Str("method", name), m.Params).Msg("peer info")
	default:
		name = "other"
		if f := c.cfg.OnNotification; f != nil {
			f(c, string(m.Method), bytes.Clone(m.Params))
			break
		}
		c.Log(zerolog.DebugLevel).Bytes("method", m.Method).Msg("notification ignored")
	}
	c.cfg.Metrics.Notifications.WithLabelValues(name).Inc()
	return nil
}

// logPeerError logs a _CloseReason or _Error. Neither is answered, and a
// _CloseReason does not close the connection: the peer does that. The
// first _CloseReason is kept as the cause of the close that follows.
func (c *Conn) logPeerError(method string, params []byte) {
	ev := logParams(c.Log(zerolog.WarnLevel).Str("method", method), params)
	if e := notificationError(params); e != nil {
		// "message" is the log line's own field: the peer's goes beside it.
		ev = ev.Str("string_code", e.EffectiveCode()).Str("peer_message", e.Message)
		if method == transport.MethodCloseReason {
			c.mu.Lock()
			if c.peerClose == nil {
				c.peerClose = e
			}
			c.mu.Unlock()
		}
	}
	ev.Msg("peer reported an error")
}

// PeerCloseReason returns the error of the first _CloseReason the peer
// sent, or nil: the cause the peer gave for closing the connection. It is
// set before the close it announces is seen, so a call that failed because
// the connection closed finds it here.
func (c *Conn) PeerCloseReason() *transport.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peerClose
}

func notificationError(params []byte) *transport.Error {
	var p struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil
	}
	e, err := transport.DecodeError(p.Error)
	if err != nil {
		return nil
	}
	return e
}

// maxLoggedParams keeps a peer from writing megabytes into our logs.
const maxLoggedParams = 2048

func logParams(ev *zerolog.Event, p []byte) *zerolog.Event {
	switch {
	case len(p) == 0:
		return ev
	case len(p) > maxLoggedParams:
		return ev.Str("params_prefix", string(p[:maxLoggedParams])).Int("params_bytes", len(p))
	}
	return ev.RawJSON("params", p)
}

func quote(b []byte) string { return string(transport.AppendString(nil, string(b))) }

// abortWith aborts the connection: the _CloseReason carrying e is written
// after what is already queued (with a write deadline, so it cannot block
// for long), then the connection closes. The first reason wins.
func (c *Conn) abortWith(reason CloseReason, e *transport.Error) {
	if !c.setReason(reason, e) {
		return
	}
	c.cfg.Metrics.Aborts.WithLabelValues(e.EffectiveCode()).Inc()
	c.Log(zerolog.InfoLevel).Str("reason", reason.String()).Str("string_code", e.EffectiveCode()).
		Str("details", e.Details).Msg("aborting connection")
	c.w.finish(c.closeReasonFrame(e), reason == ReasonSlowReader, c.expired.Load())
	c.cancel()
}

// closeWith closes the connection without a _CloseReason.
func (c *Conn) closeWith(reason CloseReason, err error) {
	if !c.setReason(reason, err) {
		return
	}
	c.w.finish(nil, true, true)
	c.cancel()
}

func (c *Conn) setReason(reason CloseReason, err error) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reason != ReasonNone {
		return false
	}
	c.reason = reason
	if err != nil {
		c.closeErr = err
	} else {
		c.closeErr = &CloseError{Reason: reason}
	}
	return true
}

// Close closes the connection immediately, without a _CloseReason, and
// waits until its read loop has finished.
func (c *Conn) Close() error {
	c.closeWith(ReasonLocal, nil)
	<-c.done
	return nil
}

// finish runs when the read loop ends, on whichever goroutine runs it then.
func (c *Conn) finish() {
	c.closeWith(ReasonPeerClosed, nil)
	c.stopTimers()
	c.w.wait()
	c.w.chargeTo(nil) // everything is released by now
	c.failPending()
	c.fr.Reset(nil, 0)
	c.mu.Lock()
	reason := c.reason
	c.mu.Unlock()
	if c.bound != nil {
		c.bound.Closed()
	}
	c.Log(zerolog.DebugLevel).Str("reason", reason.String()).Dur("age", time.Since(c.started)).Msg("connection closed")
	close(c.done)
	if c.server != nil {
		c.server.forget(c, reason) // last: Shutdown may return once it is done
	}
}

// CloseError is the error of a connection that closed for reason.
type CloseError struct {
	Reason CloseReason
}

func (e *CloseError) Error() string { return "connection closed: " + e.Reason.String() }

// Unwrap lets errors.Is(err, ErrClosed) match every close.
func (e *CloseError) Unwrap() error { return ErrClosed }
