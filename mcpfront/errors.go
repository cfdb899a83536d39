package mcpfront

import (
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/skillgate/skillgate/transport"
)

// Errors of the MCP front door itself; method failures come from dispatch.
var (
	// ErrNoIdentity is a request that reached a handler without an
	// authenticated identity, which the HTTP middleware never lets through.
	ErrNoIdentity = errors.New("mcp: request without an identity")
	// ErrBadToolsMode is an unknown Options.Tools value.
	ErrBadToolsMode = errors.New(`mcp: tools must be "skills", "protocol" or "both"`)
	// ErrResourceTooLarge is a resource larger than a resources/read answer
	// may carry.
	ErrResourceTooLarge = errors.New("mcp: resource too large")
)

// rpcError turns a Skills Protocol error into the JSON-RPC error the SDK
// sends: the same code, message and data (string_code, details, retry) as
// on the other front doors.
func rpcError(e *transport.Error) error {
	return &jsonrpc.Error{Code: int64(e.Code), Message: e.WireMessage(), Data: e.AppendData(nil)}
}
