package transport

// This file is the catalogue of the transport's protocol constants: every
// numeric error code (Code*, an int32 on the wire), the string codes
// (String*, data.string_code) JSON-RPC's codes map to, and the string
// codes of the connection layer (admission, lifecycle, backpressure) that
// session and the front doors' own admission send. Numeric and string
// codes have distinct names so that a numeric -32602 can never be confused
// with the string "JSONRPC_INVALID_PARAMS".
//
// Application codes (SKILL_NOT_FOUND, RATE_LIMITED, ...) are not here:
// they belong to the methods that answer them, in dispatch/codes.go; a
// failed run's error types are in internal/runerror. A new connection-level
// code is added here, next to its siblings, so that no two packages spell
// one code twice.

// Numeric codes: JSON-RPC's reserved codes, the transport's keepalive code,
// and the single code of every application error.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	CodeKeepalive      = -32000
	CodeApplication    = 1 // every application error, per the transport specification
)

// String codes of the transport specification's mapping.
const (
	StringParseError     = "JSONRPC_PARSE_ERROR"
	StringInvalidRequest = "JSONRPC_INVALID_REQUEST"
	StringMethodNotFound = "JSONRPC_METHOD_NOT_FOUND"
	StringInvalidParams  = "JSONRPC_INVALID_PARAMS"
	StringInternalError  = "INTERNAL_ERROR"
	StringKeepalive      = "KEEPALIVE"
	StringUnknown        = "UNKNOWN"
)

// String codes of the connection layer: admission, lifecycle and
// backpressure. Every front door sends them.
const (
	StringOverloaded         = "OVERLOADED"
	StringServerShutdown     = "SERVER_SHUTDOWN"
	StringInitTimeout        = "INIT_TIMEOUT"
	StringSlowReader         = "SLOW_READER"
	StringAlreadyInitialized = "ALREADY_INITIALIZED"
	StringResponseTooLarge   = "RESPONSE_TOO_LARGE"
	StringUnexpectedResponse = "UNEXPECTED_RESPONSE"
)

// StringCodeFor maps a numeric code to its string code as the transport
// specification requires.
func StringCodeFor(code int32) string {
	switch code {
	case CodeParseError:
		return StringParseError
	case CodeInvalidRequest:
		return StringInvalidRequest
	case CodeMethodNotFound:
		return StringMethodNotFound
	case CodeInvalidParams:
		return StringInvalidParams
	case CodeInternalError:
		return StringInternalError
	case CodeKeepalive:
		return StringKeepalive
	}
	return StringUnknown
}

// Errors that several layers send unchanged. They are shared values: never
// modify one; WithDetails and WithRetry return copies.
var (
	ErrMethodNotFound = NewError(CodeMethodNotFound, "Method not found.")
	ErrInternal       = NewError(CodeInternalError, "Internal error.")
)
