package transport

// This file is the gateway's one catalogue of protocol constants: every
// numeric error code (Code*, an int32 on the wire) and every string code
// (String*, data.string_code) that any front door sends. Numeric and
// string codes have distinct names so that a numeric -32602 can never be
// confused with the string "JSONRPC_INVALID_PARAMS". A package that needs a
// new string code adds it here, next to its siblings, so that no two
// packages spell one code twice.

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
// backpressure. Both front doors send them.
const (
	StringOverloaded         = "OVERLOADED"
	StringServerShutdown     = "SERVER_SHUTDOWN"
	StringInitTimeout        = "INIT_TIMEOUT"
	StringSlowReader         = "SLOW_READER"
	StringAlreadyInitialized = "ALREADY_INITIALIZED"
	StringResponseTooLarge   = "RESPONSE_TOO_LARGE"
	StringUnexpectedResponse = "UNEXPECTED_RESPONSE"
)

// String codes of the Skills Protocol and the gateway's methods (design §4).
const (
	StringSkillNotFound       = "SKILL_NOT_FOUND"
	StringBlobNotFound        = "BLOB_NOT_FOUND"
	StringAuthRequired        = "AUTH_REQUIRED"
	StringPermissionDenied    = "PERMISSION_DENIED"
	StringVersionIncompatible = "VERSION_INCOMPATIBLE"
	StringRateLimited         = "RATE_LIMITED"
	StringCanceled            = "CANCELLED"
	StringSandboxUnavailable  = "SANDBOX_UNAVAILABLE"
	StringBlobTooLarge        = "BLOB_TOO_LARGE"
	StringValidationError     = "VALIDATION_ERROR"
	StringNotFound            = "NOT_FOUND"
	StringMethodNotAllowed    = "METHOD_NOT_ALLOWED"
	StringStorageFull         = "STORAGE_FULL"
	StringRunNotFound         = "RUN_NOT_FOUND"
	// StringUploadNotFound: an unknown, finished, expired or another
	// identity's upload id (-32602, like BLOB_NOT_FOUND).
	StringUploadNotFound = "UPLOAD_NOT_FOUND"
	// StringEnvironmentBuilding: the skill (or the base environment every
	// run gets) is waiting for its Python environment to be built; retry.
	StringEnvironmentBuilding = "ENVIRONMENT_BUILDING"
)

// Execution-level error types (a failed run's error.type). The gateway
// reserves them: a user exception never maps onto one.
const (
	StringExecutionTimeout    = "EXECUTION_TIMEOUT"
	StringMemoryLimitExceeded = "MEMORY_LIMIT_EXCEEDED"
	StringOutputTooLarge      = "OUTPUT_TOO_LARGE"
	StringSandboxError        = "SANDBOX_ERROR"
	// StringInterrupted: the gateway stopped while the run was in
	// progress (a run stopped by cancel_run is StringCanceled).
	StringInterrupted = "INTERRUPTED"
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
