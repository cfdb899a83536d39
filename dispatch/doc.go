// Package dispatch maps JSON-RPC methods to their implementations. Every
// front door (framedfront, httpfront's POST /rpc, mcpfront) calls the same
// method table through a Front of its own, describing its caller with a
// Caller, and gets parameter decoding, error mapping, panic recovery,
// logging and metrics around every call. It imports no front door.
package dispatch
