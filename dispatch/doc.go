// Package dispatch maps JSON-RPC methods to their implementations. It
// implements session.Handler for the framed transport and serves the same
// method table over the stateless HTTP POST /rpc front door, with parameter
// decoding, error mapping, panic recovery, logging and metrics around every
// call.
package dispatch
