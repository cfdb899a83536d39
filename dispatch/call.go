package dispatch

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/transport"
)

// invoke runs one call with everything every call gets: lookup, panic
// recovery (the caller's connection lives on), a log line, metrics, and
// mapping of the error to its wire form.
func (d *Dispatcher) invoke(ctx context.Context, call *Call) (res any, err error) {
	m := d.lookup(call.Method, call.Front)
	if m == nil {
		m = d.other
		err = transport.ErrMethodNotFound.WithDetails("unknown method " + quoteName(call.Method))
	} else {
		call.Method = m.name
	}
	mm := d.methodMetrics(m, call.Front)
	// Inline methods finish before anyone could see them in flight.
	var inflight prometheus.Gauge
	if !m.inline {
		inflight = d.inflightOf(call.Front)
		inflight.Inc()
		active := d.calls.of(call.Front)
		active.Add(1)
		defer active.Add(-1)
	}
	start := time.Now()
	if err == nil && m.name != MethodInitialize {
		err = d.authorize(call)
	}
	if err == nil {
		res, err = d.run(ctx, m, call)
	}
	elapsed := time.Since(start)
	if inflight != nil {
		inflight.Dec()
	}
	mm.Duration.Observe(elapsed.Seconds())
	wire := d.authDetails(d.wireError(m, err), m.name)
	if wire == nil {
		mm.OK.Inc()
		call.Log(zerolog.DebugLevel).Str("method", m.name).Dur("took", elapsed).Msg("call served")
		return res, nil
	}
	mm.Failed(wire.EffectiveCode())
	d.authFailed(call.Front, err)
	ev := call.Log(zerolog.DebugLevel)
	if wire.Code == transport.CodeInternalError {
		ev = call.Log(zerolog.ErrorLevel).AnErr("cause", err)
	}
	ev.Str("method", m.name).Str("string_code", wire.EffectiveCode()).Dur("took", elapsed).Msg("call failed")
	return nil, errorForFront(err, wire, call.Front)
}

// methodMetrics returns a method's metrics for a front door: the two
// built-in fronts keep theirs at hand, others look theirs up.
func (d *Dispatcher) methodMetrics(m *method, front string) *metrics.MethodMetrics {
	switch front {
	case metrics.FrontFramed:
		return m.framed
	case metrics.FrontHTTP:
		return m.http
	}
	return d.opts.Metrics.Method(front, m.name)
}

func (d *Dispatcher) inflightOf(front string) prometheus.Gauge {
	switch front {
	case metrics.FrontFramed:
		return d.inflight[0]
	case metrics.FrontHTTP:
		return d.inflight[1]
	}
	return d.opts.Metrics.Inflight.WithLabelValues(front)
}

func (d *Dispatcher) run(ctx context.Context, m *method, call *Call) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			d.opts.Metrics.Panics.Inc()
			call.Log(zerolog.ErrorLevel).Str("method", m.name).Interface("panic", p).
				Bytes("stack", debug.Stack()).Msg("method panicked")
			res, err = nil, transport.ErrInternal
		}
	}()
	return m.fn(ctx, call)
}

func quoteName(name string) string {
	if len(name) > 128 {
		name = name[:128] + "…"
	}
	return string(transport.AppendString(nil, name))
}
