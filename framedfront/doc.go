// Package framedfront is the framed transport's front door: it serves the
// dispatcher's method table on the long-lived TCP and TLS connections of
// package session, as httpfront serves it on POST /rpc and mcpfront over
// MCP. It keeps what only a connection has: the identity Initialize
// established (and the identity's connection slot it holds), the request
// ids, the connection's notification queue and its backpressure, and the
// transport specification's rule that a number outside its accepted range
// aborts the connection.
package framedfront
