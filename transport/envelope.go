package transport

import "strconv"

// Envelope is the top-level members of a JSON-RPC message that the
// transport knows, as raw JSON spans aliasing the body; absent members are
// nil. Unknown members are ignored.
type Envelope struct {
	JSONRPC, ID, Method, Params, Result, Error []byte
	// Duplicate names the first known member given twice; such a body is
	// refused, so that no front door picks the first or the last copy.
	Duplicate string
}

// ScanEnvelope validates body as one JSON value with the scanner Decode
// uses and returns the top-level members of the object it must be, without
// checking their types. It serves front doors with laxer rules than the
// framed transport (plain JSON-RPC 2.0 over HTTP: any id type, optional
// params) so that every front door parses a body alike. A *ParseError
// means invalid JSON; an *InvalidMessageError means no object (a batch
// included) or a duplicate member, in which case the returned Envelope
// still holds the members read, the last copy of the duplicate among them.
func ScanEnvelope(body []byte) (Envelope, error) {
	var env envelope
	if err := scanEnvelope(body, &env); err != nil {
		return Envelope{}, err
	}
	out := Envelope{
		JSONRPC: env.jsonrpc, ID: env.id, Method: env.method,
		Params: env.params, Result: env.result, Error: env.err,
		Duplicate: env.duplicate,
	}
	if env.duplicate != "" {
		return out, &InvalidMessageError{Reason: "duplicate member " + strconv.Quote(env.duplicate)}
	}
	return out, nil
}
