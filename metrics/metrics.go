package metrics

import (
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

const namespace = "skillgate"

// Front doors, the value of the "front" label.
const (
	FrontFramed = "framed"
	FrontHTTP   = "http"
	FrontMCP    = "mcp"
)

// OutcomeOK is the "outcome" label of a successful call; failed calls carry
// the error's string code, which the gateway draws from a fixed set.
const OutcomeOK = "ok"

// Metrics holds every collector of the gateway. Create one with New and pass
// it to the packages that record; nothing is registered globally.
type Metrics struct {
	Registry *prometheus.Registry

	ConnectionsActive   *prometheus.GaugeVec   // listener
	ConnectionsAccepted *prometheus.CounterVec // listener
	ConnectionsClosed   *prometheus.CounterVec // listener, reason
	ConnectionsRejected *prometheus.CounterVec // listener, reason

	FramesReceived prometheus.Counter
	FramesSent     prometheus.Counter
	BytesReceived  prometheus.Counter
	BytesSent      prometheus.Counter
	Aborts         *prometheus.CounterVec // string_code
	WriteQueue     prometheus.Histogram   // bytes queued per write batch
	KeepaliveRTT   prometheus.Histogram
	KeepalivesSent prometheus.Counter
	Notifications  *prometheus.CounterVec // method

	Requests        *prometheus.CounterVec   // front, method, outcome
	RequestDuration *prometheus.HistogramVec // front, method
	Inflight        *prometheus.GaugeVec     // front
	Panics          prometheus.Counter
	BudgetRefusals  *prometheus.CounterVec // front

	SandboxRuns     *prometheus.CounterVec // kind, status, reason
	SandboxDuration *prometheus.HistogramVec
	AuthFailures    *prometheus.CounterVec // front, reason
	RateLimited     *prometheus.CounterVec // front, class
	SkillReloads    *prometheus.CounterVec // result
	// EnvBuilds counts pip runs that built a skill or base environment, by
	// result (ok, failed); EnvBuildDuration is their wall time.
	EnvBuilds        *prometheus.CounterVec
	EnvBuildDuration prometheus.Histogram
	HTTPRefused      *prometheus.CounterVec // reason

	EgressConnections *prometheus.CounterVec // result: allowed or the refusing rule
	EgressBytes       *prometheus.CounterVec // direction: up (to the internet), down
	EgressDuration    prometheus.Histogram

	methodsMu sync.Mutex
	methods   map[methodKey]*MethodMetrics
}

type methodKey struct{ front, method string }

// New creates the gateway's collectors and registers them, with the Go and
// process collectors, on a new registry.
func New(version string) *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry(), methods: make(map[methodKey]*MethodMetrics)}
	m.initConnections()
	m.initTransport()
	m.initRPC()
	m.initOps()
	m.Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfo(version),
	)
	return m
}

func (m *Metrics) initConnections() {
	m.ConnectionsActive = m.gaugeVec("connections", "active", "Framed connections currently open.", "listener")
	m.ConnectionsAccepted = m.counterVec("connections", "accepted_total", "Framed connections accepted.", "listener")
	m.ConnectionsClosed = m.counterVec("connections", "closed_total", "Framed connections closed, by close reason.", "listener", "reason")
	m.ConnectionsRejected = m.counterVec("connections", "rejected_total", "Connections refused before serving (limits, TLS handshake failures).", "listener", "reason")
}

func (m *Metrics) initTransport() {
	m.FramesReceived = m.counter("transport", "frames_received_total", "Frames read from framed connections.")
	m.FramesSent = m.counter("transport", "frames_sent_total", "Frames written to framed connections.")
	m.BytesReceived = m.counter("transport", "received_bytes_total", "Bytes of frames read from framed connections.")
	m.BytesSent = m.counter("transport", "sent_bytes_total", "Bytes of frames written to framed connections.")
	m.Aborts = m.counterVec("transport", "aborts_total", "Connections aborted with a _CloseReason, by its string code.", "string_code")
	m.WriteQueue = m.histogram("transport", "write_batch_bytes", "Bytes written per coalesced socket write.",
		prometheus.ExponentialBuckets(64, 4, 9))
	m.KeepaliveRTT = m.histogram("keepalive", "rtt_seconds", "Round trip of the gateway's _Keepalive requests.",
		prometheus.ExponentialBuckets(0.0005, 4, 10))
	m.KeepalivesSent = m.counter("keepalive", "sent_total", "_Keepalive requests sent by the gateway.")
	m.Notifications = m.counterVec("transport", "notifications_received_total", "Notifications received, by method (unknown methods as \"other\").", "method")
}

func (m *Metrics) initRPC() {
	m.Requests = m.counterVec("rpc", "requests_total", "Requests served, by front door, method and outcome (ok or the error's string code).", "front", "method", "outcome")
	m.RequestDuration = m.histogramVec("rpc", "request_duration_seconds", "Time to serve a request, by front door and method.",
		prometheus.ExponentialBuckets(0.00005, 4, 12), "front", "method")
	m.Inflight = m.gaugeVec("rpc", "inflight", "Requests being served, by front door.", "front")
	m.Panics = m.counter("rpc", "panics_total", "Handler panics recovered into INTERNAL_ERROR responses.")
	m.BudgetRefusals = m.counterVec("gateway", "budget_refusals_total",
		"Requests or answers refused with OVERLOADED because the gateway-wide queued bytes budget was full, by front door.", "front")
}

// The results of EnvBuilds.
const (
	EnvBuildOK     = "ok"
	EnvBuildFailed = "failed"
)

func (m *Metrics) initOps() {
	m.SandboxRuns = m.counterVec("sandbox", "runs_total", "Sandbox runs, by kind (execute_skill, run_code), status and reason.", "kind", "status", "reason")
	m.SandboxDuration = m.histogramVec("sandbox", "run_duration_seconds", "Wall time of sandbox runs, by kind.",
		prometheus.ExponentialBuckets(0.001, 4, 10), "kind")
	m.AuthFailures = m.counterVec("auth", "failures_total", "Failed authentications, by front door and reason.", "front", "reason")
	m.RateLimited = m.counterVec("ratelimit", "limited_total", "Calls refused by rate limits, by front door and identity class.", "front", "class")
	m.SkillReloads = m.counterVec("skills", "reloads_total", "Skill registry reloads, by result.", "result")
	m.EnvBuilds = m.counterVec("skill", "environment_builds_total", "Python environment builds (pip runs), by result: ok or failed.", "result")
	for _, r := range []string{EnvBuildOK, EnvBuildFailed} {
		m.EnvBuilds.WithLabelValues(r) // at zero from the start, for dashboards and alerts
	}
	m.EnvBuildDuration = m.histogram("skill", "environment_build_duration_seconds", "Wall time of Python environment builds.",
		prometheus.ExponentialBuckets(0.25, 2, 12))
	m.HTTPRefused = m.counterVec("http", "refused_total", "HTTP connections, requests and calls refused by the front door's limits and guards, by reason.", "reason")
	m.EgressConnections = m.counterVec("egress", "connections_total", "Outgoing connections of sandboxed runs, by result: allowed or the rule that refused them.", "result")
	m.EgressBytes = m.counterVec("egress", "bytes_total", "Bytes relayed for sandboxed runs, by direction (up: to the destination, down: to the run).", "direction")
	m.EgressDuration = m.histogram("egress", "connection_duration_seconds", "Duration of allowed outgoing connections of sandboxed runs.",
		prometheus.ExponentialBuckets(0.001, 4, 10))
}

// MethodMetrics are the per-method collectors of one front door, resolved
// once so that recording a call does not hash label values.
type MethodMetrics struct {
	OK       prometheus.Counter
	Duration prometheus.Observer
	failures *prometheus.CounterVec
	front    string
	method   string
}

// Method returns the collectors for method on front. Callers must pass only
// methods from a fixed table (unknown ones as "other") to keep labels bounded.
func (m *Metrics) Method(front, method string) *MethodMetrics {
	m.methodsMu.Lock()
	defer m.methodsMu.Unlock()
	k := methodKey{front, method}
	if mm := m.methods[k]; mm != nil {
		return mm
	}
	mm := &MethodMetrics{
		OK:       m.Requests.WithLabelValues(front, method, OutcomeOK),
		Duration: m.RequestDuration.WithLabelValues(front, method),
		failures: m.Requests,
		front:    front,
		method:   method,
	}
	m.methods[k] = mm
	return mm
}

// Failed counts a call that ended in the error with the given string code.
func (mm *MethodMetrics) Failed(stringCode string) {
	mm.failures.WithLabelValues(mm.front, mm.method, stringCode).Inc()
}

func buildInfo(version string) prometheus.Collector {
	goVersion, revision := runtime.Version(), "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "build_info",
		Help:        "Build information of the running gateway; the value is always 1.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": goVersion, "revision": revision},
	})
	g.Set(1)
	return g
}

func (m *Metrics) counter(subsystem, name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help})
	m.Registry.MustRegister(c)
	return c
}

func (m *Metrics) counterVec(subsystem, name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help}, labels)
	m.Registry.MustRegister(c)
	return c
}

func (m *Metrics) gaugeVec(subsystem, name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help}, labels)
	m.Registry.MustRegister(g)
	return g
}

func (m *Metrics) histogram(subsystem, name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help, Buckets: buckets})
	m.Registry.MustRegister(h)
	return h
}

func (m *Metrics) histogramVec(subsystem, name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help, Buckets: buckets}, labels)
	m.Registry.MustRegister(h)
	return h
}

// QueuedBytes exports the gateway-wide budget of queued answer bytes:
// skillgate_gateway_queued_bytes (in use) and
// skillgate_gateway_queued_bytes_limit (its size; 0 means no limit). used
// and limit are read at scrape time.
func (m *Metrics) QueuedBytes(used, limit func() float64) {
	m.GaugeFunc("gateway", "queued_bytes", "Bytes of answers queued for delivery across all connections and HTTP requests.", used)
	m.GaugeFunc("gateway", "queued_bytes_limit", "Size of the gateway-wide queued bytes budget (--max-total-queued-bytes; 0: no limit).", limit)
}

// GaugeFunc registers a gauge whose value is read from fn at scrape time, for
// state owned elsewhere (queue depth, blob store size, loaded skills).
func (m *Metrics) GaugeFunc(subsystem, name, help string, fn func() float64) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(
		prometheus.GaugeOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help}, fn))
}
