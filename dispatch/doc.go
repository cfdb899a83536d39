// Package dispatch maps JSON-RPC methods to their implementations. It
// implements session.Handler for the framed transport and offers the same
// method table to the other front doors (httpfront's POST /rpc, mcpfront)
// through Front, with parameter decoding, error mapping, panic recovery,
// logging and metrics around every call.
package dispatch
