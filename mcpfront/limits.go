package mcpfront

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillgate/skillgate/metrics"
)

// limitRequests charges every MCP request to its identity's request rate,
// as every call on the other front doors is charged: lists, reads, ping
// and the rest, not only the requests that become a method call. A call
// that reaches dispatch (tools/call, resources/read, prompts/get) is
// charged there, once per method call; one answered before it (an unknown
// or hidden name, arguments the SDK refused) is charged here afterwards.
// Notifications are not charged: they get no answer to refuse them with,
// and dropping notifications/cancelled would keep a run going.
func (s *Server) limitRequests(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "initialize" {
			if err := s.adopt(req); err != nil {
				return nil, err
			}
		}
		if s.opts.Limiter == nil || strings.HasPrefix(method, "notifications/") || prepaid(req) {
			return next(ctx, method, req)
		}
		switch method {
		case "tools/call", "resources/read", "prompts/get":
			reached := new(atomic.Bool)
			res, err := next(context.WithValue(ctx, reachedKey{}, reached), method, req)
			if !reached.Load() {
				if lerr := s.charge(req); lerr != nil {
					return nil, lerr
				}
			}
			return res, err
		}
		if err := s.charge(req); err != nil {
			return nil, err
		}
		return next(ctx, method, req)
	}
}

// reachedKey marks a request's context; Server.call sets the flag under
// it (markReached) when the request becomes a method call, which dispatch
// charges.
type reachedKey struct{}

func markReached(ctx context.Context) {
	if r, ok := ctx.Value(reachedKey{}).(*atomic.Bool); ok {
		r.Store(true)
	}
}

// prepaid reports a request whose token its HTTP request paid when it was
// admitted as a new session (the initialize), taking the credit.
func prepaid(req mcp.Request) bool {
	sl := slotOf(req)
	return sl != nil && sl.prepaid.CompareAndSwap(true, false)
}

// charge takes a request from the identity's bucket, or answers
// RATE_LIMITED as dispatch does.
func (s *Server) charge(req mcp.Request) error {
	id := s.identity(req)
	if id == nil {
		return nil // refused as unauthenticated by whatever answers it
	}
	err := s.opts.Limiter.AllowRequest(id)
	if err == nil {
		return nil
	}
	if s.opts.Front != nil {
		s.opts.Front.Metrics().RateLimited.WithLabelValues(metrics.FrontMCP, string(id.Class())).Inc()
	}
	return rpcError(limitRefusal(err).err)
}
