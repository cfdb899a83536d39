package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"runtime/debug"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/transport"
)

// Dispatch runs one call of method with params (a JSON object) for
// caller, with everything every call gets: lookup, authorization, panic
// recovery (the caller's connection lives on), a log line, metrics, and
// mapping of the error to its wire form. The result is the method's Go
// value. An error is a *transport.Error, or the *ParamError of a number
// outside its accepted range, which a front door may treat as a protocol
// error (the framed transport aborts the connection, as 001 requires);
// ToWire maps it to its ordinary invalid-params answer.
func (f *Front) Dispatch(ctx context.Context, method string, params json.RawMessage, caller Caller) (any, error) {
	call := callPool.Get().(*Call)
	*call = Call{Method: method, Params: params, Front: f.name, caller: caller, log: &f.d.opts.Logger}
	res, err := f.d.invoke(ctx, f, call)
	*call = Call{}
	callPool.Put(call)
	return res, err
}

// callPool recycles Calls: methods use their Call only until they return.
var callPool = sync.Pool{New: func() any { return new(Call) }}

func (d *Dispatcher) invoke(ctx context.Context, f *Front, call *Call) (res any, err error) {
	m := d.lookup(call.Method, call.caller)
	if m == nil {
		m = d.other
		err = transport.ErrMethodNotFound.WithDetails("unknown method " + quoteName(call.Method))
	} else {
		call.Method = m.name
	}
	mm := f.metricsOf(m)
	// Inline methods finish before anyone could see them in flight.
	if !m.inline {
		f.inflight.Inc()
		f.active.Add(1)
		defer f.active.Add(-1)
	}
	start := time.Now()
	if err == nil && m.name != MethodInitialize {
		err = d.authorize(call)
	}
	if err == nil {
		res, err = d.run(ctx, m, call)
	}
	elapsed := time.Since(start)
	if !m.inline {
		f.inflight.Dec()
	}
	mm.Duration.Observe(elapsed.Seconds())
	wire := d.authDetails(d.wireError(m, err), m.name)
	if wire == nil {
		mm.OK.Inc()
		call.Log(zerolog.DebugLevel).Str("method", m.name).Dur("took", elapsed).Msg("call served")
		return res, nil
	}
	mm.Failed(wire.EffectiveCode())
	d.authFailed(f.name, err)
	ev := call.Log(zerolog.DebugLevel)
	if wire.Code == transport.CodeInternalError {
		ev = call.Log(zerolog.ErrorLevel).AnErr("cause", err)
	}
	ev.Str("method", m.name).Str("string_code", wire.EffectiveCode()).Dur("took", elapsed).Msg("call failed")
	if pe := (*ParamError)(nil); errors.As(err, &pe) && pe.NumberRange {
		return nil, pe
	}
	return nil, wire
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
