package httpfront

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/transport"
)

var nullID = []byte("null")

// Options configure the HTTP front door.
type Options struct {
	// MaxBodyBytes bounds a request body; larger ones get 413.
	MaxBodyBytes int64
	// MaxResponseBytes bounds each answer body, a whole batch included,
	// like the framed transport's message size limit.
	MaxResponseBytes int
	// BodyTimeout bounds the arrival of the whole body, counted from the
	// end of the headers, as --frame-timeout bounds a frame; 0: no bound.
	BodyTimeout time.Duration
	// Budget is the gateway-wide budget of answer bytes, shared with the
	// framed transport; nil: no limit.
	Budget *session.Budget
	// WriteTimeout bounds the writing of an answer, so that a client that
	// does not read cannot hold the answer's budget bytes; 0: no bound.
	WriteTimeout time.Duration
	// AllowedOrigins are the browser origins ("https://app.example.com")
	// whose requests are served; a request carrying any other Origin
	// header is refused. Empty: every request with an Origin is refused.
	AllowedOrigins []string
	// AllowedHosts are Host names accepted, besides loopback names and
	// addresses, on a request that arrives at a loopback address (a
	// reverse proxy on the same machine). Empty: loopback names only.
	AllowedHosts []string
}

// Server serves the stateless JSON-RPC 2.0 front door at POST /rpc:
// the same method table as the framed transport (except Initialize, which
// HTTP does not need), any id type echoed, batches, and HTTP statuses per
// the Skills Protocol: 200 for every processed call (errors included), 204
// when nothing is to be returned, 400 for malformed JSON, 403 for requests
// a browser may have been tricked into sending, 404 for other paths, 405
// for other HTTP methods, 408 for a body that does not arrive in time, 413
// for bodies over the limit.
type Server struct {
	front    *dispatch.Front
	opts     Options
	mux      *http.ServeMux
	guard    guard
	fallback fallbacks
	metrics  *metrics.Metrics
	stop     chan struct{} // closed by Expire
	once     sync.Once
}

// New returns the HTTP front door, whose calls front invokes (the
// dispatcher's Front(metrics.FrontHTTP)).
func New(front *dispatch.Front, opts Options) *Server {
	h := &Server{front: front, opts: opts, metrics: front.Metrics(), stop: make(chan struct{})}
	for _, r := range refusalReasons {
		h.metrics.HTTPRefused.WithLabelValues(r) // at zero from the start, for dashboards and alerts
	}
	h.guard = newGuard(opts)
	h.fallback = newFallbacks(opts.MaxResponseBytes)
	h.mux = http.NewServeMux()
	h.mux.HandleFunc("/rpc", h.serveRPC)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeHTTPError(w, http.StatusNotFound, transport.AppError(stringNotFound, "Not found: the JSON-RPC endpoint is POST /rpc."))
	})
	return h
}

// The string codes of the HTTP listener's own answers: a request for a path
// other than /rpc (404) or with a method other than POST (405) never
// reaches JSON-RPC, so these codes are HTTP's, not the transport's or an
// application's, and only this front door sends them.
const (
	stringNotFound         = "NOT_FOUND"
	stringMethodNotAllowed = "METHOD_NOT_ALLOWED"
)

// refusalReasons are the "reason" values of skillgate_http_refused_total
// this package records.
var refusalReasons = []string{"content_type", "origin", "host", "duplicate_authorization", "too_large", "body_timeout", "connection_limit"}

// Handle serves another endpoint on the same listener (such as the MCP
// front door at /mcp) behind the same Origin and Host rules as /rpc.
func (h *Server) Handle(pattern string, handler http.Handler) {
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if ref := h.guard.checkOrigin(r); ref != nil {
			h.refuse(w, ref)
			return
		}
		handler.ServeHTTP(w, r)
	})
}

// ServeHTTP implements http.Handler.
func (h *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Expire makes every request in flight answer SERVER_SHUTDOWN at once, for
// its calls not yet finished, and every later request too. It is how the
// drain deadline reaches HTTP clients (see Shutdown). Calls already
// running are canceled but not waited for.
func (h *Server) Expire() { h.once.Do(func() { close(h.stop) }) }

func (h *Server) stopped() bool {
	select {
	case <-h.stop:
		return true
	default:
		return false
	}
}

func (h *Server) serveRPC(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeHTTPError(w, http.StatusMethodNotAllowed, transport.AppError(stringMethodNotAllowed, "Use POST for JSON-RPC calls."))
		return
	}
	if ref := h.guard.check(r); ref != nil {
		h.refuse(w, ref)
		return
	}
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	if !transport.ValidJSON(body) {
		writeHTTPError(w, http.StatusBadRequest, transport.NewError(transport.CodeParseError, "Parse error.").
			WithDetails("the body is not valid UTF-8 JSON"))
		return
	}
	who := h.authenticate(r, w)
	who.remote = r.RemoteAddr
	if wantsEventStream(r) && h.serveStream(w, r, body, who) {
		return
	}
	out, held := h.answer(r.Context(), body, who)
	defer h.opts.Budget.Release(held)
	if h.stopped() {
		w.Header().Set("Connection", "close")
	}
	if out == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if h.opts.WriteTimeout > 0 {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(h.opts.WriteTimeout))
	}
	_, _ = w.Write(out)
}

// readBody reads the whole body within BodyTimeout and MaxBodyBytes. A
// declared length over the limit is refused before reading anything, so a
// client that sent "Expect: 100-continue" is never asked for the body.
func (h *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.ContentLength > h.opts.MaxBodyBytes {
		h.refuse(w, tooLarge(h.opts.MaxBodyBytes))
		return nil, false
	}
	rc := http.NewResponseController(w)
	if h.opts.BodyTimeout > 0 {
		_ = rc.SetReadDeadline(time.Now().Add(h.opts.BodyTimeout))
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
	if h.opts.BodyTimeout > 0 {
		// A deadline left behind would cancel the request's context
		// while its calls run: net/http reads ahead to notice a client
		// that goes away.
		_ = rc.SetReadDeadline(time.Time{})
	}
	var mbe *http.MaxBytesError
	switch {
	case err == nil:
		return body, true
	case errors.As(err, &mbe):
		h.refuse(w, tooLarge(mbe.Limit))
	case errors.Is(err, os.ErrDeadlineExceeded):
		h.refuse(w, &refusal{status: http.StatusRequestTimeout, reason: "body_timeout", close: true,
			err: transport.NewError(transport.CodeParseError, "Parse error.").
				WithDetails("the body did not arrive within " + strconv.FormatInt(h.opts.BodyTimeout.Milliseconds(), 10) + " ms")})
	default:
		writeHTTPError(w, http.StatusBadRequest, transport.NewError(transport.CodeParseError, "Parse error.").WithDetails(err.Error()))
	}
	return nil, false
}

func tooLarge(limit int64) *refusal {
	return &refusal{status: http.StatusRequestEntityTooLarge, reason: "too_large", close: true,
		err: transport.NewError(transport.CodeInvalidRequest, "Invalid request.").
			WithDetails("the body exceeds the limit of " + strconv.FormatInt(limit, 10) + " bytes")}
}

// refusal is a request turned away before any call ran.
type refusal struct {
	status int
	reason string // the metric label
	close  bool   // the connection cannot serve another request
	err    *transport.Error
}

func (h *Server) refuse(w http.ResponseWriter, ref *refusal) {
	h.metrics.HTTPRefused.WithLabelValues(ref.reason).Inc()
	if ref.close {
		w.Header().Set("Connection", "close")
	}
	writeHTTPError(w, ref.status, ref.err)
}

func firstByte(b []byte) byte {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c
		}
	}
	return 0
}

// credentials are what an HTTP request authenticated as (or why not).
type credentials struct {
	id     *auth.Identity
	err    error
	remote string
}

// authenticate reads "Authorization: Bearer <token>" (or the TLS client
// certificate) once per HTTP request. Refused credentials are reported per
// call, as AUTH_REQUIRED, with a WWW-Authenticate challenge.
func (h *Server) authenticate(r *http.Request, w http.ResponseWriter) credentials {
	id, err := h.front.Credentials(r)
	if err != nil {
		return challenge(w, err)
	}
	return credentials{id: id}
}

// noStream is why a call answered as plain JSON cannot receive run_event.
const noStream = "needs a response streamed as server-sent events: send the request alone (not in a batch, " +
	"with an id) and with the header Accept: text/event-stream"

// request is the call of member m made with these credentials.
func (c credentials) request(m *httpMember) *dispatch.Request {
	return &dispatch.Request{Method: m.method, Params: m.params, Identity: c.id, AuthErr: c.err, Remote: c.remote, NoStream: noStream}
}

func challenge(w http.ResponseWriter, err error) credentials {
	w.Header().Set("WWW-Authenticate", `Bearer realm="skillgate"`)
	return credentials{err: err}
}

func responseBody(id, result []byte, e *transport.Error) []byte {
	if e != nil {
		return transport.AppendErrorResponse(nil, id, e)
	}
	return transport.AppendResult(nil, id, result)
}

func writeHTTPError(w http.ResponseWriter, status int, e *transport.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(responseBody(nullID, nil, e))
}

// WithAccessLog wraps h with one access log line per request.
func WithAccessLog(h http.Handler, log zerolog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		log.Debug().Str("front", "http").Str("remote", r.RemoteAddr).Str("method", r.Method).
			Str("path", r.URL.Path).Int("status", sw.status).Dur("took", time.Since(start)).Msg("http request")
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection's deadlines.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
