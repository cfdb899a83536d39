package httpfront

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/transport"
)

// HTTP front door limits.
const (
	maxBatch      = 100 // members of one batch
	batchParallel = 8   // members of one batch served at once
)

// httpMember is one call of an HTTP request, read before anything runs.
type httpMember struct {
	id     []byte // the raw id; null when absent or unreadable
	notify bool   // a valid notification: served, never answered
	method string
	params []byte
	bad    *transport.Error // answered without running
}

// parseMember reads one call object as plain JSON-RPC 2.0 allows it (any
// id type, params optional) with the transport's scanner, so a duplicate
// member is refused here as on the framed transport. An invalid call is
// answered with -32600, id null when its id cannot be read.
func parseMember(raw []byte) httpMember {
	m := httpMember{id: nullID}
	env, err := transport.ScanEnvelope(raw)
	var ie *transport.InvalidMessageError
	if env.Duplicate != "" && errors.As(err, &ie) {
		if env.Duplicate != "id" && env.ID != nil && validID(env.ID) {
			m.id = env.ID
		}
		m.bad = invalidHTTPRequest(ie.Reason)
		return m
	}
	if err != nil || !validID(env.ID) {
		m.bad = invalidHTTPRequest("a call must be an object with a string, number or null id")
		return m
	}
	if env.ID != nil {
		m.id = env.ID
	}
	method, ok := transport.Unquote(env.Method)
	version, _ := transport.Unquote(env.JSONRPC)
	if version != "2.0" || !ok {
		m.bad = invalidHTTPRequest(`a call needs "jsonrpc":"2.0" and a string "method"`)
		return m
	}
	m.method, m.notify = method, env.ID == nil
	m.params = env.Params
	if m.params == nil || string(m.params) == "null" {
		m.params = transport.EmptyObject
	}
	if firstByte(m.params) != '{' {
		m.bad = transport.NewError(transport.CodeInvalidParams, "Invalid params.").WithDetails("params must be an object (named parameters)")
	}
	return m
}

func validID(id []byte) bool {
	if id == nil {
		return true
	}
	switch firstByte(id) {
	case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

func invalidHTTPRequest(details string) *transport.Error {
	return transport.NewError(transport.CodeInvalidRequest, "Invalid request.").WithDetails(details)
}

// parseBody splits a validated body into its calls.
func parseBody(body []byte) (ms []httpMember, batch bool, e *transport.Error) {
	if firstByte(body) != '[' {
		return []httpMember{parseMember(body)}, false, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(body, &raws); err != nil || len(raws) == 0 {
		return nil, true, invalidHTTPRequest("an empty batch")
	}
	if len(raws) > maxBatch {
		return nil, true, invalidHTTPRequest("a batch may hold at most " + strconv.Itoa(maxBatch) + " calls")
	}
	ms = make([]httpMember, len(raws))
	for i, raw := range raws {
		ms[i] = parseMember(raw)
	}
	return ms, true, nil
}

// answer serves the calls of a request body and returns the answer body
// (nil when there is nothing to answer) and the bytes it holds from the
// gateway's budget, to release once written.
func (h *Server) answer(ctx context.Context, body []byte, who credentials) ([]byte, int) {
	ms, batch, e := parseBody(body)
	if e != nil {
		return responseBody(nullID, nil, e), 0
	}
	a := h.newAssembly(ms, batch)
	if a.overCap() {
		// Even the shortest answers of all calls exceed the limit: run
		// nothing rather than work whose answers cannot be sent.
		return responseBody(nullID, nil, transport.AppError(transport.StringResponseTooLarge, "The batch's answer cannot fit the message size limit.").
			WithDetails("the error answers alone of this batch's "+strconv.Itoa(len(ms))+" calls exceed the limit of "+
				strconv.Itoa(h.opts.MaxResponseBytes)+" bytes; send fewer calls per batch")), 0
	}
	return a.run(ctx, who)
}

// serveMember runs one call and returns its answer, or nil for a
// notification.
func (h *Server) serveMember(ctx context.Context, m *httpMember, who credentials) []byte {
	var res json.RawMessage
	var e *transport.Error
	switch {
	case m.bad != nil:
		e = m.bad
	case h.stopped():
		e = h.fallback.shutdown
	case h.budgetFull():
		h.metrics.BudgetRefusals.WithLabelValues(metrics.FrontHTTP).Inc()
		e = h.fallback.overloaded
	default:
		res, e = h.front.Serve(ctx, who.request(m))
	}
	if m.notify {
		return nil
	}
	return h.encode(m.id, res, e)
}

// budgetFull reports whether the gateway already holds as many answer
// bytes as it may: new work is refused rather than run.
func (h *Server) budgetFull() bool {
	b := h.opts.Budget
	return b.Limit() > 0 && b.Used() >= b.Limit()
}

func (h *Server) encode(id []byte, res json.RawMessage, e *transport.Error) []byte {
	if e != nil {
		return responseBody(id, nil, e)
	}
	out := responseBody(id, res, nil)
	if h.opts.MaxResponseBytes > 0 && len(out) > h.opts.MaxResponseBytes {
		return responseBody(id, nil, transport.AppError(transport.StringResponseTooLarge, "The response is larger than the message size limit.").
			WithDetails("the result of "+strconv.Itoa(len(out))+" bytes exceeds the limit of "+
				strconv.Itoa(h.opts.MaxResponseBytes)+" bytes; request less data (for example read_blob with mode sample_head and max_bytes)"))
	}
	return out
}
