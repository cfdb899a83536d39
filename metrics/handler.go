package metrics

import (
	"net/http"
	"net/http/pprof"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Health tracks what /readyz reports. The zero value is not ready.
type Health struct {
	ready   atomic.Bool
	reason  atomic.Pointer[string]
	details atomic.Pointer[string]
}

// SetDetails sets lines that /readyz appends to its status line whether
// ready or not (e.g. what enforces the sandbox's limits), so an operator's
// probe shows them without reading the start-up log.
func (h *Health) SetDetails(text string) {
	text = strings.TrimRight(text, "\n")
	h.details.Store(&text)
}

func (h *Health) detailLines() string {
	if d := h.details.Load(); d != nil && *d != "" {
		return "\n" + *d
	}
	return ""
}

// SetReady marks the gateway ready to take traffic.
func (h *Health) SetReady() {
	h.ready.Store(true)
	h.reason.Store(nil)
}

// SetNotReady marks the gateway unready, e.g. while it drains.
func (h *Health) SetNotReady(reason string) {
	h.reason.Store(&reason)
	h.ready.Store(false)
}

// Ready reports readiness and, when not ready, why.
func (h *Health) Ready() (bool, string) {
	if h.ready.Load() {
		return true, ""
	}
	if r := h.reason.Load(); r != nil {
		return false, *r
	}
	return false, "starting"
}

// HandlerOptions configure the operations handler.
type HandlerOptions struct {
	Pprof bool // serve /debug/pprof/ too
}

// Handler serves /metrics, /healthz (the process is alive) and /readyz (200
// when ready, 503 with the reason otherwise).
func (m *Metrics) Handler(h *Health, opts HandlerOptions) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeText(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ok, why := h.Ready(); !ok {
			writeText(w, http.StatusServiceUnavailable, "not ready: "+why+h.detailLines())
			return
		}
		writeText(w, http.StatusOK, "ready"+h.detailLines())
	})
	if opts.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

func writeText(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body + "\n"))
}
