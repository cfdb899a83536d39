package dispatch

import (
	"context"
	"errors"

	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/transport"
)

// String codes of the Skills Protocol and the gateway (design §4).
const (
	CodeSkillNotFound       = "SKILL_NOT_FOUND"
	CodeBlobNotFound        = "BLOB_NOT_FOUND"
	CodeAuthRequired        = "AUTH_REQUIRED"
	CodePermissionDenied    = "PERMISSION_DENIED"
	CodeVersionIncompatible = "VERSION_INCOMPATIBLE"
	CodeRateLimited         = "RATE_LIMITED"
	CodeOverloaded          = session.StringOverloaded
	CodeServerShutdown      = session.StringServerShutdown
	CodeCanceled            = "CANCELLED"
	CodeInvalidParams       = transport.StringInvalidParams
	CodeInternal            = transport.StringInternalError
	CodeMethodNotFound      = transport.StringMethodNotFound
	CodeResponseTooLarge    = session.StringResponseTooLarge
	CodeSandboxUnavailable  = "SANDBOX_UNAVAILABLE"
	CodeBlobTooLarge        = "BLOB_TOO_LARGE"
	CodeStorageFull         = "STORAGE_FULL"
	CodeAlreadyInitialized  = session.StringAlreadyInitialized
	CodeValidationError     = "VALIDATION_ERROR"
	CodeExecutionTimeout    = "EXECUTION_TIMEOUT"
	CodeMemoryLimitExceeded = "MEMORY_LIMIT_EXCEEDED"
	CodeOutputTooLarge      = "OUTPUT_TOO_LARGE"
	CodeSandboxError        = "SANDBOX_ERROR"
)

var errInternal = transport.NewError(transport.CodeInternalError, "Internal error.")

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
		return transport.AppError(CodeCanceled, "The call was canceled.")
	case errors.Is(err, context.DeadlineExceeded):
		return transport.AppError(CodeCanceled, "The call ran out of time.").WithRetry(1000, 2)
	}
	for _, m := range domainErrors {
		if errors.Is(err, m.target) {
			return m.wire(err)
		}
	}
	return errInternal
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
