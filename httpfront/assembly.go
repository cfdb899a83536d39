package httpfront

import (
	"bytes"
	"context"
	"strconv"

	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/transport"
)

// fallbacks are the errors that replace a call's answer when it cannot be
// sent as it is. Every call is promised room for the longest of them
// (overhead bytes plus its id), which is how an answer body is kept
// within the message size limit whatever the calls return.
type fallbacks struct {
	tooLarge, overloaded, shutdown *transport.Error
	overhead                       int
}

func newFallbacks(limit int) fallbacks {
	f := fallbacks{
		tooLarge: transport.AppError(transport.StringResponseTooLarge, "The answer does not fit the message size limit.").
			WithDetails("the answers of this batch would exceed the limit of " + strconv.Itoa(limit) +
				" bytes; send fewer calls per batch or ask for less data (for example read_blob with mode sample_head and max_bytes)"),
		overloaded: transport.AppError(transport.StringOverloaded, "The gateway holds as many answers as it may; retry shortly.").
			WithRetryHint(session.RetryBudget),
		shutdown: transport.AppError(transport.StringServerShutdown, "The server is shutting down.").WithRetryHint(session.RetryShutdown),
	}
	for _, e := range []*transport.Error{f.tooLarge, f.overloaded, f.shutdown} {
		f.overhead = max(f.overhead, len(responseBody(nil, nil, e)))
	}
	return f
}

// assembly builds the answer body of one request in call order: at most
// batchParallel calls run ahead of the first unanswered one, so a request
// holds no more than its limit plus a few answers being built. Each answer
// is accepted only if it fits beside the room promised to the calls still
// to come, and only if the gateway's budget has room for it.
type assembly struct {
	h        *Server
	ms       []httpMember
	batch    bool
	size     int // bytes accepted, brackets and commas included
	promised int // room kept for the fallbacks of calls not yet accepted
	held     int // bytes taken from the budget
	parts    [][]byte
}

func (h *Server) newAssembly(ms []httpMember, batch bool) *assembly {
	a := &assembly{h: h, ms: ms, batch: batch}
	if batch {
		a.size = 2
	}
	for i := range ms {
		a.promised += a.room(&ms[i])
	}
	return a
}

// room is what a call's fallback answer takes in the body.
func (a *assembly) room(m *httpMember) int {
	if m.notify {
		return 0
	}
	return a.cost(len(m.id) + a.h.fallback.overhead)
}

func (a *assembly) cost(n int) int {
	if a.batch {
		return n + 1 // the comma
	}
	return n
}

func (a *assembly) overCap() bool {
	limit := a.h.opts.MaxResponseBytes
	return limit > 0 && a.size+a.promised > limit
}

// run serves the calls and returns the body and the budget bytes it holds.
// When the front door expires, calls not yet answered are answered
// SERVER_SHUTDOWN at once; their goroutines end on their own.
func (a *assembly) run(ctx context.Context, who credentials) ([]byte, int) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]chan []byte, len(a.ms))
	next := 0
	start := func() {
		if next < len(a.ms) && !a.h.stopped() {
			i := next
			results[i] = make(chan []byte, 1)
			go func() { results[i] <- a.h.serveMember(ctx, &a.ms[i], who) }()
			next++
		}
	}
	for range batchParallel {
		start()
	}
	for i := range a.ms {
		var out []byte
		select {
		case out = <-results[i]:
		case <-a.h.stop:
			select {
			case out = <-results[i]: // finished: its answer stands
			default:
				out = a.fallback(i, a.h.fallback.shutdown)
			}
		}
		a.accept(i, out)
		start()
	}
	return a.body(), a.held
}

func (a *assembly) fallback(i int, e *transport.Error) []byte {
	m := &a.ms[i]
	if m.notify {
		return nil
	}
	return responseBody(m.id, nil, e)
}

// accept adds the answer of call i, or its fallback when it does not fit.
func (a *assembly) accept(i int, out []byte) {
	a.promised -= a.room(&a.ms[i])
	if out == nil {
		return
	}
	if limit := a.h.opts.MaxResponseBytes; limit > 0 && a.size+a.cost(len(out))+a.promised > limit {
		out = a.fallback(i, a.h.fallback.tooLarge)
	}
	budget := a.h.opts.Budget
	if !budget.TryReserve(len(out)) {
		over := a.fallback(i, a.h.fallback.overloaded)
		if !bytes.Equal(out, over) { // a call refused up front was counted then
			a.h.metrics.BudgetRefusals.WithLabelValues(metrics.FrontHTTP).Inc()
		}
		out = over
		budget.Reserve(len(out))
	}
	a.held += len(out)
	a.size += a.cost(len(out))
	a.parts = append(a.parts, out)
}

func (a *assembly) body() []byte {
	switch {
	case len(a.parts) == 0:
		return nil
	case !a.batch:
		return a.parts[0]
	}
	out := make([]byte, 0, a.size)
	out = append(out, '[')
	for i, p := range a.parts {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, p...)
	}
	return append(out, ']')
}
