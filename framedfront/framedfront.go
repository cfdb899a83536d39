package framedfront

import (
	"context"
	"errors"
	"sync"

	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/transport"
)

// Handler serves a dispatcher's methods on framed connections. It
// implements session.Handler, session.Binder and session.Inliner.
type Handler struct {
	front *dispatch.Front
}

// New returns the framed front door of d, counted in metrics as
// metrics.FrontFramed.
func New(d *dispatch.Dispatcher) *Handler {
	return &Handler{front: d.Front(metrics.FrontFramed)}
}

// Configure sets what the connection layer takes from the application:
// the method that initializes a connection and the hint of an over-size
// answer.
func Configure(c *session.Config) {
	c.InitMethod = dispatch.MethodInitialize
	c.TooLargeHint = dispatch.ResponseTooLargeHint
}

// Handle serves a request of a framed connection.
func (h *Handler) Handle(ctx context.Context, req *session.Request) (any, error) {
	c := callerPool.Get().(*caller)
	c.conn, c.req = req.Conn, req
	res, err := h.front.Dispatch(ctx, req.Method, req.Params, c)
	*c = caller{}
	callerPool.Put(c)
	if pe := (*dispatch.ParamError)(nil); errors.As(err, &pe) && pe.NumberRange {
		// 001: a number the receiver cannot represent is a parse error,
		// which ends the connection.
		return nil, &session.Abort{Err: transport.NewError(transport.CodeParseError, "Parse error.").WithDetails(pe.Error())}
	}
	return res, err
}

// callerPool recycles callers: the dispatcher keeps none past the call
// (a background run keeps a detached copy).
var callerPool = sync.Pool{New: func() any { return new(caller) }}

// Inline reports whether a method is answered on the connection's read
// loop: one that never blocks.
func (h *Handler) Inline(name []byte) bool { return h.front.Dispatcher().Inline(name) }

// Bind creates a connection's state when it is accepted.
func (h *Handler) Bind(*session.Conn) session.ConnState { return new(ConnState) }

var (
	_ session.Handler = (*Handler)(nil)
	_ session.Binder  = (*Handler)(nil)
	_ session.Inliner = (*Handler)(nil)
)
