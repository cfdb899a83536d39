package httpfront

import (
	"context"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/skillgate/skillgate/transport"
)

// wantsEventStream reports whether the client accepts server-sent events.
func wantsEventStream(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "text/event-stream" {
			return true
		}
	}
	return false
}

// sseWriter answers one HTTP call as server-sent events once the call
// sends a notification: "event: <method>" with the JSON-RPC notification
// as data, then "event: response" with the response. A call that sends
// none is answered as plain JSON. Events are written as they come, each
// under the write timeout: a client that stops reading fails the
// notification, which ends the call's stream.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration

	mu      sync.Mutex // guards started and writes
	started bool
}

// notify is the call's dispatch.Notifier: each notification is encoded
// here, once, as the event's data.
func (s *sseWriter) notify(ctx context.Context, method string, params any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	obj, err := transport.MarshalObject(params)
	if err != nil {
		return err
	}
	return s.event(method, transport.AppendNotification(nil, method, obj))
}

func (s *sseWriter) event(name string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		s.started = true
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-store")
		s.w.WriteHeader(http.StatusOK)
	}
	if s.timeout > 0 {
		_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	}
	buf := make([]byte, 0, len(data)+len(name)+16)
	buf = append(append(append(buf, "event: "...), name...), "\ndata: "...)
	buf = append(append(buf, data...), "\n\n"...)
	if _, err := s.w.Write(buf); err != nil {
		return err
	}
	return s.rc.Flush()
}

// serveStream serves a single call whose client accepts server-sent
// events. It reports false, having written nothing, for bodies it does
// not take (a batch, a notification, an invalid call): those are answered
// as plain JSON.
func (h *Server) serveStream(w http.ResponseWriter, r *http.Request, body []byte, who credentials) bool {
	if firstByte(body) == '[' {
		return false
	}
	m := parseMember(body)
	if m.bad != nil || m.notify || h.stopped() || h.budgetFull() {
		return false
	}
	s := &sseWriter{w: w, rc: http.NewResponseController(w), timeout: h.opts.WriteTimeout}
	req := who.request(&m)
	req.ID, req.Notify = idString(m.id), s.notify
	// A stream may last as long as its run: the drain deadline ends it
	// like any call still running then.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-h.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	res, e := h.front.Serve(ctx, req)
	out := h.encode(m.id, res, e)
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if !started {
		w.Header().Set("Content-Type", "application/json")
		if h.opts.WriteTimeout > 0 {
			_ = s.rc.SetWriteDeadline(time.Now().Add(h.opts.WriteTimeout))
		}
		_, _ = w.Write(out)
		return true
	}
	_ = s.event("response", out)
	return true
}

// idString is the text of a JSON-RPC id for run_event's request_id: a
// string id unquoted, a number as written.
func idString(raw []byte) string {
	if s, ok := transport.Unquote(raw); ok {
		return s
	}
	if string(raw) == "null" {
		return ""
	}
	return string(raw)
}
