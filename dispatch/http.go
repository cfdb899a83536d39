package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/transport"
)

// HTTP front door limits.
const (
	maxBatch      = 100 // members of one batch
	batchParallel = 8   // members of one batch served at once
)

var nullID = []byte("null")

// HTTPOptions configure the HTTP front door.
type HTTPOptions struct {
	// MaxBodyBytes bounds a request body; larger ones get 413.
	MaxBodyBytes int64
	// MaxResponseBytes bounds each response object, like the framed
	// transport's message size limit.
	MaxResponseBytes int
}

// HTTPHandler serves the stateless JSON-RPC 2.0 front door at POST /rpc:
// the same method table as the framed transport (except Initialize, which
// HTTP does not need), any id type echoed, batches, and HTTP statuses per
// the Skills Protocol: 200 for every processed call (errors included), 204
// when nothing is to be returned, 400 for malformed JSON, 404 for other
// paths, 405 for other HTTP methods, 413 for bodies over the limit.
func (d *Dispatcher) HTTPHandler(opts HTTPOptions) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/rpc", &httpFront{d: d, opts: opts})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeHTTPError(w, http.StatusNotFound, transport.AppError(transport.StringNotFound, "Not found: the JSON-RPC endpoint is POST /rpc."))
	})
	return mux
}

type httpFront struct {
	d    *Dispatcher
	opts HTTPOptions
}

func (h *httpFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeHTTPError(w, http.StatusMethodNotAllowed, transport.AppError(transport.StringMethodNotAllowed, "Use POST for JSON-RPC calls."))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeHTTPError(w, http.StatusRequestEntityTooLarge, transport.NewError(transport.CodeInvalidRequest, "Invalid request.").
				WithDetails("the body exceeds the limit of "+strconv.FormatInt(mbe.Limit, 10)+" bytes"))
			return
		}
		writeHTTPError(w, http.StatusBadRequest, transport.NewError(transport.CodeParseError, "Parse error.").WithDetails(err.Error()))
		return
	}
	if !transport.ValidJSON(body) {
		writeHTTPError(w, http.StatusBadRequest, transport.NewError(transport.CodeParseError, "Parse error.").
			WithDetails("the body is not valid UTF-8 JSON"))
		return
	}
	who := h.authenticate(r, w)
	who.remote = r.RemoteAddr
	ctx := r.Context()
	var out []byte
	if first := firstByte(body); first == '[' {
		out = h.batch(ctx, body, who)
	} else {
		out = h.serveMember(ctx, body, who)
	}
	if out == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

func firstByte(b []byte) byte {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c
		}
	}
	return 0
}

// batch serves the members of a batch, a few at once, keeping their
// order; notifications get no entry and an all-notification batch gets
// nothing at all.
func (h *httpFront) batch(ctx context.Context, body []byte, who credentials) []byte {
	var members []json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil || len(members) == 0 {
		return responseBody(nullID, nil, transport.NewError(transport.CodeInvalidRequest, "Invalid request.").
			WithDetails("an empty batch"))
	}
	if len(members) > maxBatch {
		return responseBody(nullID, nil, transport.NewError(transport.CodeInvalidRequest, "Invalid request.").
			WithDetails("a batch may hold at most "+strconv.Itoa(maxBatch)+" calls"))
	}
	outs := make([][]byte, len(members))
	sem := make(chan struct{}, batchParallel)
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			outs[i] = h.serveMember(ctx, m, who)
		}()
	}
	wg.Wait()
	out := []byte{'['}
	for _, o := range outs {
		if o == nil {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, o...)
	}
	if len(out) == 1 {
		return nil
	}
	return append(out, ']')
}

// httpCall is one JSON-RPC 2.0 call as plain JSON-RPC allows it: any id
// type, params optional. Members are matched by their exact names.
type httpCall struct {
	jsonrpc, method, params, id []byte
}

func parseHTTPCall(raw []byte) (httpCall, bool) {
	var c httpCall
	if firstByte(raw) != '{' {
		return c, false
	}
	err := transport.EachMember(raw, func(key, val []byte) error {
		switch string(key) {
		case "jsonrpc":
			c.jsonrpc = val
		case "method":
			c.method = val
		case "params":
			c.params = val
		case "id":
			c.id = val
		}
		return nil
	})
	return c, err == nil
}

// serveMember serves one call object and returns its response object, or
// nil for a valid notification. An invalid call is answered with -32600
// (id null when its id cannot be read), as JSON-RPC 2.0 requires.
func (h *httpFront) serveMember(ctx context.Context, raw []byte, who credentials) []byte {
	c, isObject := parseHTTPCall(raw)
	if !isObject || !validID(c.id) {
		return responseBody(nullID, nil, invalidHTTPRequest("a call must be an object with a string, number or null id"))
	}
	id := c.id
	notification := id == nil
	if id == nil {
		id = nullID
	}
	method, ok := transport.Unquote(c.method)
	if string(c.jsonrpc) != `"2.0"` || !ok {
		return responseBody(id, nil, invalidHTTPRequest(`a call needs "jsonrpc":"2.0" and a string "method"`))
	}
	params := c.params
	if params == nil || string(params) == "null" {
		params = transport.EmptyObject
	}
	var res any
	var err error
	if firstByte(params) != '{' {
		err = transport.NewError(transport.CodeInvalidParams, "Invalid params.").WithDetails("params must be an object (named parameters)")
	} else {
		res, err = h.d.invoke(ctx, &Call{Method: method, Params: params, Front: metrics.FrontHTTP,
			Remote: who.remote, log: &h.d.opts.Logger, Identity: who.id, authErr: who.err})
	}
	if notification {
		return nil
	}
	return h.encode(id, res, err)
}

func (h *httpFront) encode(id []byte, res any, err error) []byte {
	if err != nil {
		return responseBody(id, nil, ToWire(err))
	}
	obj, encErr := transport.MarshalObject(res)
	if encErr != nil {
		h.d.opts.Logger.Error().Err(encErr).Msg("cannot encode result")
		return responseBody(id, nil, transport.ErrInternal)
	}
	out := responseBody(id, obj, nil)
	if h.opts.MaxResponseBytes > 0 && len(out) > h.opts.MaxResponseBytes {
		return responseBody(id, nil, transport.AppError(transport.StringResponseTooLarge, "The response is larger than the message size limit.").
			WithDetails("the result of "+strconv.Itoa(len(out))+" bytes exceeds the limit of "+
				strconv.Itoa(h.opts.MaxResponseBytes)+" bytes; "+ResponseTooLargeHint))
	}
	return out
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
func (h *httpFront) authenticate(r *http.Request, w http.ResponseWriter) credentials {
	token := ""
	if v := r.Header.Get("Authorization"); v != "" {
		scheme, rest, _ := strings.Cut(v, " ")
		if !strings.EqualFold(scheme, "Bearer") {
			return h.refuse(w, auth.ErrBadCredentials)
		}
		token = strings.TrimSpace(rest)
	}
	id, err := h.d.authn.Authenticate(token, r.TLS)
	if err != nil {
		return h.refuse(w, err)
	}
	return credentials{id: id}
}

func (h *httpFront) refuse(w http.ResponseWriter, err error) credentials {
	w.Header().Set("WWW-Authenticate", `Bearer realm="skillgate"`)
	return credentials{err: err}
}

func validID(id json.RawMessage) bool {
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

// ServeHTTPWithLogging wraps h with one access log line per request.
func (d *Dispatcher) ServeHTTPWithLogging(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		d.opts.Logger.Debug().Str("front", "http").Str("remote", r.RemoteAddr).Str("method", r.Method).
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
