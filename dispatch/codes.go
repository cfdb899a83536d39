package dispatch

// This file is the catalogue of the gateway's application error codes:
// the string codes (data.string_code) of errors with code 1
// (transport.CodeApplication) that the methods of the Skills Protocol and
// the gateway answer. Every front door (framed, HTTP /rpc, MCP) sends
// them from here. The other vocabularies live where they are decided:
//
//   - transport/codes.go: JSON-RPC's numeric codes, their string codes and
//     the connection layer's string codes (OVERLOADED, SERVER_SHUTDOWN,
//     INIT_TIMEOUT, ...), which session and the fronts' admission send;
//   - httpfront: NOT_FOUND and METHOD_NOT_ALLOWED, HTTP answers to a
//     request that never reached JSON-RPC;
//   - internal/runerror: a failed run's error.type, which is a result,
//     not an error.
//
// A new application code is added here, with the condition it names, and
// to docs/protocol.md's table. No package below dispatch spells one
// (internal/archtest checks).
const (
	// StringSkillNotFound: no visible skill of that name (and version).
	StringSkillNotFound = "SKILL_NOT_FOUND"
	// StringBlobNotFound: an unknown, expired or another identity's blob.
	StringBlobNotFound = "BLOB_NOT_FOUND"
	// StringRunNotFound: an unknown, expired or another identity's run.
	StringRunNotFound = "RUN_NOT_FOUND"
	// StringUploadNotFound: an unknown, finished, expired or another
	// identity's upload id (-32602, like BLOB_NOT_FOUND).
	StringUploadNotFound = "UPLOAD_NOT_FOUND"
	// StringAuthRequired: no valid credential (missing, unknown, expired,
	// revoked).
	StringAuthRequired = "AUTH_REQUIRED"
	// StringPermissionDenied: the identity may not call the method or use
	// the skill or blob.
	StringPermissionDenied = "PERMISSION_DENIED"
	// StringVersionIncompatible: Initialize named no protocol version the
	// gateway speaks.
	StringVersionIncompatible = "VERSION_INCOMPATIBLE"
	// StringRateLimited: the identity's request rate, concurrent runs or
	// connections are over its limit; retry after data.retry (RateLimited).
	StringRateLimited = "RATE_LIMITED"
	// StringCanceled: the call was canceled or ran out of time.
	StringCanceled = "CANCELLED"
	// StringSandboxUnavailable: code execution is off on this gateway, or
	// a skill's environment failed to build.
	StringSandboxUnavailable = "SANDBOX_UNAVAILABLE"
	// StringBlobTooLarge: a blob over the gateway's size limit.
	StringBlobTooLarge = "BLOB_TOO_LARGE"
	// StringStorageFull: the blob store, the identity's quota, the disk or
	// the descriptors are exhausted; nothing was stored.
	StringStorageFull = "STORAGE_FULL"
	// StringEnvironmentBuilding: the skill (or the base environment every
	// run gets) is waiting for its Python environment to be built; retry.
	StringEnvironmentBuilding = "ENVIRONMENT_BUILDING"
)
