package mcpfront

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/dispatch"
	sgauth "github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/transport"
)

// DefaultMaxSessions is the default bound on Streamable HTTP sessions open
// at once, across identities: a session costs some 16 KiB and a few
// goroutines until it is closed or idles out.
const DefaultMaxSessions = 1024

// overloadRetryAfter is the delay suggested to a client refused because
// every session is taken: sessions end when clients close them or idle out.
const overloadRetryAfter = 5 * time.Second

// sessions admits new Streamable HTTP sessions: each holds one of its
// identity's connections (the limit framed connections count against)
// and one of the endpoint's MaxSessions until it ends, and ends early when
// its credential is removed from the auth file.
type sessions struct {
	max      int64 // 0: no bound
	open     atomic.Int64
	limiter  *sgauth.Limiter  // nil: identities' limits are not applied
	front    *dispatch.Front  // ends sessions whose credential is removed; nil: they outlive it until they idle out
	metrics  *metrics.Metrics // nil in tests that need none
	log      zerolog.Logger
	lastFull atomic.Int64 // unix nanoseconds of the last "every session is taken" warning
}

// Open returns how many sessions hold a slot, for tests and metrics.
func (t *sessions) Open() int { return int(t.open.Load()) }

// A slot is what a session being created holds. The request that creates
// the session admits it (pending); the session's initialize takes it over
// (held) and frees it when the session ends; a request that made no
// session frees it when it returns.
type slot struct {
	t       *sessions
	id      *sgauth.Identity
	release func() // the identity's connection
	state   atomic.Int32
	prepaid atomic.Bool // the creating request's rate-limit token, taken at admission
}

const (
	slotPending int32 = iota
	slotHeld
	slotFreed
)

// refusal is a request refused before the SDK sees it.
type refusal struct {
	status int
	err    *transport.Error
	retry  time.Duration
}

// admit takes what a new session needs: one of the identity's
// connections, one of the endpoint's sessions and a request from the
// identity's rate. A refused session takes none of them: a request is
// charged only once the session is admitted, as a refused call uses up
// nothing of the rate.
func (t *sessions) admit(id *sgauth.Identity) (*slot, *refusal) {
	release := func() {}
	if t.limiter != nil {
		r, err := t.limiter.AcquireConn(id)
		if err != nil {
			t.limited(id)
			return nil, limitRefusal(err)
		}
		release = r
	}
	if n := t.open.Add(1); t.max > 0 && n > t.max {
		t.open.Add(-1)
		release()
		t.full()
		return nil, &refusal{status: http.StatusServiceUnavailable, retry: overloadRetryAfter,
			err: transport.AppError(transport.StringOverloaded, "Too many MCP sessions.").
				WithDetails("every MCP session of this gateway is taken; retry once one has closed or idled out").
				WithRetry(overloadRetryAfter.Milliseconds(), 5)}
	}
	if t.limiter != nil {
		if ok, wait := t.limiter.Allow(id); !ok {
			t.open.Add(-1)
			release()
			t.limited(id)
			return nil, limitRefusal(&sgauth.LimitError{Err: sgauth.ErrRateLimited, RetryAfter: wait})
		}
	}
	sl := &slot{t: t, id: id, release: release}
	sl.prepaid.Store(true)
	return sl, nil
}

// fullWarnEvery spaces the warnings of a full session table, which a
// flood would otherwise repeat for every request it makes.
const fullWarnEvery = 10 * time.Second

// full counts a refusal at MaxSessions, warning at most every
// fullWarnEvery.
func (t *sessions) full() {
	if t.metrics != nil {
		t.metrics.HTTPRefused.WithLabelValues(refusedSessions).Inc()
	}
	now, last := time.Now().UnixNano(), t.lastFull.Load()
	if now-last >= int64(fullWarnEvery) && t.lastFull.CompareAndSwap(last, now) {
		t.log.Warn().Int64("max_sessions", t.max).Msg("MCP sessions refused: every session is taken (--mcp-max-sessions)")
	}
}

// refusedSessions is the skillgate_http_refused_total reason of a new MCP
// session refused at MaxSessions.
const refusedSessions = "mcp_sessions"

func (t *sessions) limited(id *sgauth.Identity) {
	if t.metrics != nil {
		t.metrics.RateLimited.WithLabelValues(metrics.FrontMCP, string(id.Class())).Inc()
	}
}

// limitRefusal answers an identity's limit as dispatch answers it on every
// front door (dispatch.RateLimited), with the same delay in Retry-After. A
// limit that names no delay is a connection's.
func limitRefusal(err error) *refusal {
	var le *sgauth.LimitError
	if !errors.As(err, &le) {
		le = &sgauth.LimitError{Err: err, RetryAfter: sgauth.ConnRetryAfter}
		err = le
	}
	return &refusal{status: http.StatusTooManyRequests, retry: le.RetryAfter, err: dispatch.RateLimited(err)}
}

// write answers the refusal as a JSON-RPC error response to the request's
// id (null when the body has none), with the HTTP status and Retry-After.
func (r *refusal) write(w http.ResponseWriter, id json.RawMessage) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", strconv.FormatInt(max(int64(math.Ceil(r.retry.Seconds())), 1), 10))
	w.WriteHeader(r.status)
	_, _ = w.Write(transport.AppendErrorResponse(nil, id, r.err))
}

// peekInitialize reads a POST body for an initialize request, leaving
// the body to be read again: only an initialize makes a session that
// outlives its request (the SDK closes the others' at once), so only it
// is admitted as one. It returns the request's id for a refusal.
func peekInitialize(r *http.Request, limit int64) (id json.RawMessage, ok bool) {
	if r.Body == nil {
		return nil, false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
	if err != nil {
		return nil, false
	}
	type message struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	var batch []message
	if json.Unmarshal(body, &batch) != nil {
		var one message
		if json.Unmarshal(body, &one) != nil {
			return nil, false
		}
		batch = []message{one}
	}
	for _, m := range batch {
		if m.Method == "initialize" {
			return m.ID, true
		}
	}
	return nil, false
}

// hold makes the slot the session's; false when the request that created
// it has already given it up.
func (sl *slot) hold() bool { return sl.state.CompareAndSwap(slotPending, slotHeld) }

// abandon frees the slot unless a session holds it.
func (sl *slot) abandon() {
	if sl.state.CompareAndSwap(slotPending, slotFreed) {
		sl.free()
	}
}

func (sl *slot) free() {
	sl.release()
	sl.t.open.Add(-1)
}

// live holds the slot for as long as ss lives, and closes ss when its
// credential is removed from the auth file (which ends its GET stream).
func (sl *slot) live(ss *mcp.ServerSession) {
	ctx, stop := context.Background(), context.CancelFunc(func() {})
	if sl.t.front != nil {
		ctx, stop = sl.t.front.UntilRevoked(ctx, sl.id)
	}
	closeOnRevoke := context.AfterFunc(ctx, func() {
		sl.t.log.Info().Str("identity", sl.id.Name()).AnErr("reason", context.Cause(ctx)).
			Msg("MCP session closed: its credential no longer authenticates")
		_ = ss.Close()
	})
	_ = ss.Wait()
	closeOnRevoke()
	stop()
	sl.state.Store(slotFreed)
	sl.free()
}

// adopt hands the slot of the request that created the session to the
// session, at its initialize.
func (s *Server) adopt(req mcp.Request) error {
	sl := slotOf(req)
	if sl == nil {
		return nil
	}
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss == nil || !sl.hold() {
		// The creating request gave up (its client went away) before the
		// initialize ran: the session has nothing to hold, so it goes.
		if ss != nil {
			go func() { _ = ss.Close() }()
		}
		return rpcError(transport.AppError(transport.StringOverloaded, "The session was given up before it began."))
	}
	go sl.live(ss)
	return nil
}

// privateAnswers marks every answer of the endpoint as private to its
// caller and not to be stored: results belong to one identity, and a
// shared cache between client and gateway must not keep them. The SDK's
// own Cache-Control (no-cache, which lets caches store) is replaced as the
// header is written.
type privateAnswers struct {
	http.ResponseWriter
	wrote bool
}

const cacheControl = "private, no-store, no-transform"

func (p *privateAnswers) WriteHeader(code int) {
	if !p.wrote {
		p.wrote = true
		p.Header().Set("Cache-Control", cacheControl)
	}
	p.ResponseWriter.WriteHeader(code)
}

func (p *privateAnswers) Write(b []byte) (int, error) {
	if !p.wrote {
		p.WriteHeader(http.StatusOK)
	}
	return p.ResponseWriter.Write(b)
}

// Flush sends what was written so far, as server-sent events need.
func (p *privateAnswers) Flush() {
	if !p.wrote {
		p.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(p.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (p *privateAnswers) Unwrap() http.ResponseWriter { return p.ResponseWriter }
