package egress

import (
	"bufio"
	"context"

	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/egress/hostpattern"
)

// Proxy serves the egress of many runs; each gets its own Run. Safe for
// concurrent use.
type Proxy struct {
	cfg Config
}

// New returns a Proxy.
func New(cfg Config) (*Proxy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if m := cfg.Metrics; m != nil {
		// Every result and direction at zero from the start, for
		// dashboards and alerts.
		for r := ReasonNone; int(r) < len(reasonNames); r++ {
			m.EgressConnections.WithLabelValues(r.String())
		}
		m.EgressBytes.WithLabelValues("up")
		m.EgressBytes.WithLabelValues("down")
	}
	return &Proxy{cfg: cfg.withDefaults()}, nil
}

// RunInfo names a run in logs.
type RunInfo struct {
	RunID, Skill, Identity string
}

// Run is the egress of one run: its policy, limits and connections.
type Run struct {
	p        *Proxy
	info     RunInfo
	policy   *Policy
	slots    chan struct{} // one per open connection
	refusals chan struct{} // one per connection being refused for lack of a slot
	readers  chan struct{} // one per connection whose request is being read
	done     chan struct{} // closed with closed
	up       atomic.Int64  // bytes towards destinations
	down     atomic.Int64  // bytes towards the run

	mu     sync.Mutex
	conns  map[net.Conn]struct{} // guarded by mu: every socket to close at the end
	closed bool                  // guarded by mu
	wg     sync.WaitGroup
}

// ForRun returns the egress of one run under policy.
func (p *Proxy) ForRun(info RunInfo, policy *Policy) *Run {
	return &Run{
		p: p, info: info, policy: policy,
		slots:    make(chan struct{}, p.cfg.MaxConns),
		refusals: make(chan struct{}, p.cfg.MaxConns),
		readers:  make(chan struct{}, p.cfg.MaxHeaderReaders),
		done:     make(chan struct{}),
		conns:    make(map[net.Conn]struct{}),
	}
}

// Serve accepts the run's connections from l until l fails (the sandbox
// closes it when the run ends), then closes every connection still open
// and returns once their handlers have. note receives one line for the
// run's own logs per refusal; it may be nil.
func (r *Run) Serve(l net.Listener, note func(string)) {
	if note == nil {
		note = func(string) {}
	}
	for {
		c, err := l.Accept()
		if err != nil {
			break
		}
		if !r.track(c) {
			_ = c.Close()
			break
		}
		// The slot is taken before the request is read, so that a run
		// cannot hold more sockets of the gateway than its limit by
		// opening connections and sending nothing. Past the limit a few
		// connections are read to answer them with the reason; the rest
		// are closed at once.
		release, limited, ok := r.acquire()
		if !ok {
			r.untrack(c)
			continue
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer r.untrack(c)
			defer release()
			r.handle(c, limited, note)
		}()
	}
	r.closeAll()
	r.wg.Wait()
}

// track registers a socket to be closed at the end; false once closing.
func (r *Run) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *Run) untrack(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
	_ = c.Close()
}

func (r *Run) closeAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed = true
		close(r.done)
	}
	for c := range r.conns {
		_ = c.Close()
	}
}

// conn is what is known of one connection, for its log event.
type conn struct {
	host     string
	port     int
	endpoint string // the URL the run asked for, for ENDPOINT_UNREACHABLE
	addr     netip.AddrPort
	reason   Reason
	detail   string
	start    time.Time
	up       int64
	down     int64
}

// acquire takes a connection slot; without one, a refusal slot (limited:
// the connection is only answered with the reason); without either, ok is
// false.
func (r *Run) acquire() (release func(), limited, ok bool) {
	select {
	case r.slots <- struct{}{}:
		return func() { <-r.slots }, false, true
	default:
	}
	select {
	case r.refusals <- struct{}{}:
		return func() { <-r.refusals }, true, true
	default:
		return nil, false, false
	}
}

func (r *Run) handle(c net.Conn, limited bool, note func(string)) {
	st := &conn{start: time.Now()}
	defer r.finish(st, note)
	req, br, used, ok := r.readRequest(c, st)
	if !ok || !r.destination(req, st) {
		answer(c, st)
		return
	}
	if limited {
		st.reason, st.detail = ReasonLimit, fmt.Sprintf("more than %d concurrent connections", cap(r.slots))
		answer(c, st)
		return
	}
	up, ok := r.connect(st)
	if !ok {
		answer(c, st)
		return
	}
	if !r.track(up) {
		_ = up.Close()
		return
	}
	defer r.untrack(up)
	var err error
	if req.Method == http.MethodConnect {
		_, err = io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
	} else {
		// The request's line and headers were charged as they were
		// read; their forwarded form is not charged again.
		sent := r.capped(up, &r.up)
		sent.free = used
		err = forwardRequest(req, sent)
		st.up = sent.n
	}
	if err == nil {
		r.relay(c, br, up, st)
	}
}

// destination reads host and port from a CONNECT or an absolute-form
// request and checks the name.
func (r *Run) destination(req *http.Request, st *conn) bool {
	var hostport string
	switch {
	case req.Method == http.MethodConnect:
		hostport = req.RequestURI
		st.endpoint = "tcp://" + hostport
	case req.URL.Scheme == "http" && req.URL.Host != "":
		hostport = req.URL.Host
		if req.URL.Port() == "" {
			hostport = net.JoinHostPort(req.URL.Hostname(), "80")
		}
		u := *req.URL
		u.User = nil
		st.endpoint = u.String()
	default:
		st.reason, st.detail = ReasonBadRequest, "only CONNECT and http:// requests are proxied"
		return false
	}
	host, portStr, err := net.SplitHostPort(hostport)
	port, perr := strconv.Atoi(portStr)
	if err != nil || perr != nil || port < 1 || port > 65535 || host == "" {
		st.reason, st.detail = ReasonBadRequest, "bad destination "+strconv.Quote(hostport)
		return false
	}
	st.host, st.port = hostpattern.NormalizeHost(host), port
	st.reason = r.policy.CheckName(st.host, port)
	return st.reason == ReasonNone
}

// connect resolves, checks every address and dials the first allowed
// one: exactly the address it checked.
func (r *Run) connect(st *conn) (net.Conn, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), r.p.cfg.ConnectTimeout)
	defer cancel()
	addrs, err := r.resolve(ctx, st.host)
	if err != nil || len(addrs) == 0 {
		st.reason, st.detail = ReasonResolve, "the name does not resolve"
		return nil, false
	}
	own, err := r.p.cfg.HostAddrs()
	if err != nil {
		st.reason, st.detail = ReasonHost, "the host's own addresses are unknown: "+err.Error()
		return nil, false
	}
	// One refused address refuses the name: a name that mixes public and
	// private answers is how rebinding attacks start.
	for _, a := range addrs {
		isOwn := slices.Contains(own, a.Unmap().WithZone(""))
		if why := r.policy.checkAddr(st.host, a, st.port, isOwn); why != ReasonNone {
			st.reason, st.addr = why, netip.AddrPortFrom(a.Unmap(), uint16(st.port))
			return nil, false
		}
	}
	var lastErr error
	for _, a := range addrs {
		st.addr = netip.AddrPortFrom(a.Unmap(), uint16(st.port))
		up, err := r.p.cfg.Dial(ctx, "tcp", st.addr.String())
		if err == nil {
			return up, true
		}
		lastErr = err
	}
	st.reason, st.detail = ReasonDial, lastErr.Error()
	return nil, false
}

// resolve leaves IP literals alone: they are checked as they are.
func (r *Run) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	return r.p.cfg.Resolver.LookupNetIP(ctx, "ip", host)
}

// forwardRequest sends a plain HTTP request on; the connection closes
// after its response, so that the next request is checked anew.
func forwardRequest(req *http.Request, up io.Writer) error {
	req.RequestURI = ""
	req.Close = true
	for k := range req.Header {
		if strings.HasPrefix(k, "Proxy-") {
			req.Header.Del(k)
		}
	}
	return req.Write(up)
}

// cappedWriter charges what it writes towards total, the run's byte count
// in one direction, and closes the run's connections once that passes the
// cap: the one place the cap is enforced, for tunnels and plain HTTP
// requests alike.
type cappedWriter struct {
	r     *Run
	w     io.Writer
	total *atomic.Int64
	n     int64 // written through this writer
	free  int64 // the next bytes written, already charged
}

func (r *Run) capped(w io.Writer, total *atomic.Int64) *cappedWriter {
	return &cappedWriter{r: r, w: w, total: total}
}

func (c *cappedWriter) Write(p []byte) (int, error) {
	charge := int64(len(p))
	free := min(c.free, charge)
	c.free -= free
	if c.total.Add(charge-free) > c.r.p.cfg.MaxBytes {
		c.r.closeAll()
		return 0, errByteCap
	}
	k, err := c.w.Write(p)
	c.n += int64(k)
	return k, err
}

// relay copies both ways until either side ends or a byte cap is hit.
func (r *Run) relay(c net.Conn, br *bufio.Reader, up net.Conn, st *conn) {
	done := make(chan struct{})
	go func() {
		st.up += r.copyCapped(up, br, &r.up)
		closeWrite(up)
		close(done)
	}()
	st.down += r.copyCapped(c, up, &r.down)
	closeWrite(c)
	<-done
}

// copyCapped copies until EOF, an error or the run's cap in that
// direction; at the cap both sockets are closed.
func (r *Run) copyCapped(dst io.Writer, src io.Reader, total *atomic.Int64) int64 {
	w := r.capped(dst, total)
	_, _ = io.CopyBuffer(w, src, make([]byte, 32<<10))
	return w.n
}

func closeWrite(c any) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	if cl, ok := c.(io.Closer); ok {
		_ = cl.Close()
	}
}

func (st *conn) target() string {
	if st.host == "" {
		return "?"
	}
	return net.JoinHostPort(st.host, strconv.Itoa(st.port))
}

func (st *conn) why() string {
	if st.detail != "" {
		return st.reason.String() + ": " + st.detail
	}
	if st.addr.IsValid() && st.reason != ReasonNone {
		return st.reason.String() + " address " + st.addr.Addr().String()
	}
	return st.reason.String()
}

// finish logs the connection, counts it and tells the run of a refusal.
func (r *Run) finish(st *conn, note func(string)) {
	ev := r.p.cfg.Logger.Info()
	if st.reason != ReasonNone {
		ev = r.p.cfg.Logger.Warn()
		note(st.line())
	}
	dur := time.Since(st.start)
	ev.Str("run_id", r.info.RunID).Str("skill", r.info.Skill).Str("identity", r.info.Identity).
		Str("host", st.host).Int("port", st.port).Int64("bytes_up", st.up).Int64("bytes_down", st.down).
		Dur("duration", dur).Str("result", st.reason.String()).Func(func(e *zerolog.Event) {
		if st.addr.IsValid() {
			e.Str("addr", st.addr.Addr().String())
		}
		if st.detail != "" {
			e.Str("detail", st.detail)
		}
	}).Msg("egress")
	if m := r.p.cfg.Metrics; m != nil {
		m.EgressConnections.WithLabelValues(st.reason.String()).Inc()
		m.EgressBytes.WithLabelValues("up").Add(float64(st.up))
		m.EgressBytes.WithLabelValues("down").Add(float64(st.down))
		if st.reason == ReasonNone {
			m.EgressDuration.Observe(dur.Seconds())
		}
	}
}
