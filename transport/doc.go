// Package transport implements the framed JSON-RPC 2.0 transport: the
// length-prefixed frame codec (8 hex digits, ':', JSON, '\n'), the strict
// message model of the transport specification (string ids, object params
// and results, no batches) and the error shape with data.string_code and
// data.details.
//
// The package depends on the standard library only and knows nothing about
// connections, sessions or methods; package session builds on it.
package transport
