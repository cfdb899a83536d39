package dispatch

import (
	"context"
	"slices"
	"sync"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/session"
)

// Handle serves a request of a framed connection; it implements
// session.Handler.
func (d *Dispatcher) Handle(ctx context.Context, req *session.Request) (any, error) {
	call := callPool.Get().(*Call)
	*call = Call{Method: req.Method, Params: req.Params, Front: metrics.FrontFramed, Conn: req.Conn, log: &d.opts.Logger}
	res, err := d.invoke(ctx, call)
	*call = Call{}
	callPool.Put(call)
	return res, err
}

// callPool recycles Calls: methods use their Call only until they return.
var callPool = sync.Pool{New: func() any { return new(Call) }}

// Inline reports whether a method is answered on the connection's read
// loop: the discovery methods that only read the in-memory catalog. It
// implements session.Inliner.
func (d *Dispatcher) Inline(name []byte) bool {
	m := d.methods[string(name)]
	return m != nil && m.inline
}

// methodsFor lists the application methods id may call after Initialize,
// under every name they answer to (canonical and CamelCase), sorted.
func (d *Dispatcher) methodsFor(id *auth.Identity) []string {
	var names []string
	for name, m := range d.methods {
		if m.name != MethodInitialize && id.AllowsMethod(m.name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
