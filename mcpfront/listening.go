//lint:file-ignore SA1019 MCP logging (logging/setLevel and the _meta log level) is deprecated from protocol 2026-07-28 but still served to clients of earlier versions; a run is streamed to a client that asked for log messages.

package mcpfront

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listening records the sessions that asked for log messages
// (logging/setLevel): only to them, or to a call that names a level in
// its _meta or carries a progressToken, is a run worth streaming. A run
// nobody listens to runs plain, without the cost of following its events.
type listening struct {
	mu       sync.Mutex
	sessions map[*mcp.ServerSession]bool // guarded by mu
}

func newListening() *listening {
	return &listening{sessions: map[*mcp.ServerSession]bool{}}
}

// track is a receiving middleware that records a successful
// logging/setLevel; a session is forgotten when it ends.
func (l *listening) track(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "logging/setLevel" || err != nil {
			return res, err
		}
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if !ok || ss == nil {
			return res, err
		}
		l.mu.Lock()
		known := l.sessions[ss]
		l.sessions[ss] = true
		l.mu.Unlock()
		if !known {
			go func() {
				_ = ss.Wait()
				l.mu.Lock()
				delete(l.sessions, ss)
				l.mu.Unlock()
			}()
		}
		return res, err
	}
}

// wants reports whether a tools/call would receive anything of a run's
// events: progress (it carries a progressToken) or log messages (its
// session set a level, or the call names one in _meta).
func (l *listening) wants(req *mcp.CallToolRequest) bool {
	if req.Params.GetProgressToken() != nil {
		return true
	}
	if _, ok := req.Params.GetMeta()[mcp.MetaKeyLogLevel]; ok {
		return true
	}
	ss := req.Session
	if ss == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sessions[ss]
}
