package session

import (
	"context"
	"encoding/json"

	"github.com/skillgate/skillgate/transport"
)

// Request is one application request received on a connection.
type Request struct {
	Method string
	Params json.RawMessage // a JSON object, owned by the handler
	Conn   *Conn
	rawID  []byte // the id's JSON string token
}

// ID returns the request's id. It is decoded on demand: most handlers never
// need it, and the response echoes the raw token.
func (r *Request) ID() string {
	id, _ := transport.Unquote(r.rawID)
	return id
}

// Handler serves the application requests of framed connections.
//
// Handle is called on its own goroutine, concurrently with other requests
// of the same connection (up to Config.MaxInflight). ctx is canceled when
// the connection closes. The result must marshal to a JSON object:
// json.RawMessage and []byte are sent as they are, nil becomes {}, any other
// value goes through encoding/json. A *transport.Error is sent as the error
// response; any other error becomes INTERNAL_ERROR without details, so
// handlers should map their errors themselves. A result implementing
// transport.Appender is written straight into the response frame. An
// *Abort aborts the
// connection instead of answering. Handle should not panic; a
// panic is recovered into INTERNAL_ERROR as a last resort.
type Handler interface {
	Handle(ctx context.Context, req *Request) (any, error)
}

// Binder is implemented by Handlers that keep state per connection (who
// it is, what it holds). Bind is called once per connection, when it is
// accepted and before its first request is read, on the connection's own
// goroutine; what it returns is the connection's State for as long as it
// lives, and its Closed is where the connection is torn down.
type Binder interface {
	Bind(c *Conn) ConnState
}

// ConnState is a Handler's value for one connection. Closed is called
// exactly once, after the connection has closed (its requests' contexts
// are canceled by then; handlers may still be returning). It must not
// block for long: it runs on the connection's last goroutine. The value is
// shared by the connection's concurrent requests, so it guards its own
// fields.
type ConnState interface {
	Closed()
}

// BudgetOwner is implemented by ConnStates that name who the connection's
// queued bytes are charged to in the gateway-wide Budget (Config.Budget):
// its identity, once initialization has succeeded. The session asks once,
// right after the initialization request succeeded; all connections whose
// owner is the same share one part of the budget. Connections without an
// owner, and all of them before initialization, share the owner "".
type BudgetOwner interface {
	BudgetOwner() string
}

// Inliner is implemented by Handlers that can answer some methods on the
// connection's read loop instead of a goroutine of their own. Inline
// answers cost no goroutine or stack growth and leave in the same write as
// the other answers to a batch of pipelined requests. Inline must be fast
// and safe for concurrent use; a method it names must never block (no
// I/O, no waiting), finish in microseconds, and keep neither the Request
// nor its Params after Handle returns: on the read loop the Request is
// reused and the Params alias the frame.
type Inliner interface {
	Inline(method []byte) bool
}

// Abort is an error a Handler returns to abort the connection instead of
// answering: the transport specification requires it for input that is
// valid JSON but carries a number outside the range the application accepts
// (a parse error). Err is sent in the _CloseReason.
type Abort struct {
	Err *transport.Error
}

func (a *Abort) Error() string { return "abort: " + a.Err.Error() }

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req *Request) (any, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, req *Request) (any, error) { return f(ctx, req) }
