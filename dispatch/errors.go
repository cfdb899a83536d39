package dispatch

import (
	"context"
	"errors"

	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/transport"
)

// ToWire maps any error a method returns to the JSON-RPC error sent to the
// client; nil stays nil. This is the one place where Go errors become wire
// errors: domain packages' sentinel errors are matched here.
func ToWire(err error) *transport.Error {
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
		return transport.AppError(transport.StringCanceled, "The call was canceled.")
	case errors.Is(err, context.DeadlineExceeded):
		return transport.AppError(transport.StringCanceled, "The call ran out of time.").WithRetry(1000, 2)
	}
	for _, m := range domainErrors {
		if errors.Is(err, m.target) {
			return m.wire(err)
		}
	}
	return transport.ErrInternal
}

// domainError maps a sentinel error of a domain package to a wire error.
type domainError struct {
	target error
	wire   func(err error) *transport.Error
}

// domainErrors is filled by the files that register domain methods.
var domainErrors []domainError

// errorForFront adjusts an error for the front door: on the framed
// transport a number outside the accepted range aborts the connection as a
// parse error, as the transport specification requires; over HTTP it is an
// ordinary invalid-params error.
func errorForFront(err error, wire *transport.Error, front string) error {
	var pe *ParamError
	if front == metrics.FrontFramed && errors.As(err, &pe) && pe.NumberRange {
		return &session.Abort{Err: transport.NewError(transport.CodeParseError, "Parse error.").WithDetails(pe.Error())}
	}
	return wire
}
