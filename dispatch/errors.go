package dispatch

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/skillgate/skillgate/transport"
)

// ToWire maps an error to the JSON-RPC error sent to the client; nil
// stays nil. It knows the errors every method shares (wire errors, bad
// params, a canceled call); the sentinel errors of domain packages are
// mapped by the error table of the method group that returns them (see
// wireError), and any other error is INTERNAL_ERROR.
func ToWire(err error) *transport.Error {
	return toWire(err)
}

// toWire is ToWire that consults tables, in order, for domain errors.
func toWire(err error, tables ...errorTable) *transport.Error {
	if err == nil {
		return nil
	}
	var (
		te *transport.Error
		pe *ParamError
	)
	switch {
	case errors.As(err, &te):
		return te
	case errors.As(err, &pe):
		return pe.wire()
	case errors.Is(err, context.Canceled):
		return transport.AppError(StringCanceled, "The call was canceled.")
	case errors.Is(err, context.DeadlineExceeded):
		return transport.AppError(StringCanceled, "The call ran out of time.").WithRetry(1000, 2)
	}
	for _, t := range tables {
		for _, m := range t {
			if errors.Is(err, m.target) {
				return m.wire(err)
			}
		}
	}
	return transport.ErrInternal
}

// errorTable maps the sentinel errors of domain packages to wire errors:
// each method group registers one with its methods (methodGroup), and
// every call also consults the access table (who may call what).
type errorTable []errorMapping

// errorMapping maps one sentinel error (matched with errors.Is).
type errorMapping struct {
	target error
	wire   func(err error) *transport.Error
}

// wireError maps an error of method m: the generic errors, then m's
// group's table, then the access table.
func (d *Dispatcher) wireError(m *method, err error) *transport.Error {
	return toWire(err, m.errors, d.accessErrors)
}

// withData returns a copy of e with members added to its data object, as
// the error classes' details (data.details itself stays the string the
// transport specification requires); optKey is added only when optValue
// is not empty (a URL the operator may leave unset).
func withData(e *transport.Error, members map[string]any, optKey, optValue string) *transport.Error {
	c := *e
	c.Extra = make(map[string][]byte, len(e.Extra)+len(members)+1)
	for k, v := range e.Extra {
		c.Extra[k] = v
	}
	if optValue != "" {
		members[optKey] = optValue
	}
	for k, v := range members {
		if raw, err := json.Marshal(v); err == nil {
			c.Extra[k] = raw
		}
	}
	return &c
}
