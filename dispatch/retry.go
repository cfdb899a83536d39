package dispatch

import (
	"errors"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/internal/runerror"
	"github.com/skillgate/skillgate/transport"
)

// RateLimited is the answer to an identity over one of its limits
// (request rate, concurrent runs, connections), on every front door:
// RATE_LIMITED, with a retry hint of the limit's own delay when err says
// it (an *auth.LimitError). A front door that refuses before dispatch (an
// MCP session) answers with it too, so that the hint is the same.
func RateLimited(err error) *transport.Error {
	e := transport.AppError(StringRateLimited, "Rate limit exceeded.").WithDetails(err.Error())
	var le *auth.LimitError
	if errors.As(err, &le) {
		e = e.WithRetry(max(le.RetryAfterMillis(), 1), 5)
	}
	return e
}

// runRetry is the retry hint of a failed run that may succeed if run
// again (a timeout, a sandbox failure, an interrupted run); runs reports
// the same one for a run a restart interrupted.
func runRetry() *transport.Retry {
	return &transport.Retry{SuggestedDelayMS: runerror.RetryDelayMS, MaxAttempts: runerror.RetryAttempts}
}
