// Package session runs framed JSON-RPC connections: listeners, the accept
// loop, one reader and one writer per connection, keepalive monitoring in
// both directions, initialization gating, close reasons and graceful drain.
//
// The same connection machinery serves the server side (Server) and the
// client side (Dial); requests are handed to a Handler, which package
// framedfront implements for the gateway.
package session
