package transport

import (
	"encoding/json"
	"errors"
)

// The Append functions write message bodies (without framing) into dst.
// Members are written in a fixed order; ids are either a raw JSON string
// token taken from a received message or a Go string that is quoted here.

const jsonrpcPrefix = `{"jsonrpc":"2.0",`

// EmptyObject is the params of a _Keepalive and the result of its answer.
var EmptyObject = []byte("{}")

// AppendResult appends a result response to the request whose id token is
// rawID. result must be a JSON object.
func AppendResult(dst, rawID, result []byte) []byte {
	dst = append(dst, jsonrpcPrefix...)
	dst = append(dst, `"id":`...)
	dst = append(dst, rawID...)
	dst = append(dst, `,"result":`...)
	dst = append(dst, result...)
	return append(dst, '}')
}

// AppendResultFunc appends a result response whose result object is
// written by appendResult.
func AppendResultFunc(dst, rawID []byte, appendResult func([]byte) []byte) []byte {
	dst = append(dst, jsonrpcPrefix...)
	dst = append(dst, `"id":`...)
	dst = append(dst, rawID...)
	dst = append(dst, `,"result":`...)
	dst = appendResult(dst)
	return append(dst, '}')
}

// AppendErrorResponse appends an error response to the request whose id
// token is rawID.
func AppendErrorResponse(dst, rawID []byte, e *Error) []byte {
	dst = append(dst, jsonrpcPrefix...)
	dst = append(dst, `"id":`...)
	dst = append(dst, rawID...)
	dst = append(dst, `,"error":`...)
	dst = e.AppendJSON(dst)
	return append(dst, '}')
}

// AppendRequest appends a request. params must be a JSON object.
func AppendRequest(dst []byte, id, method string, params []byte) []byte {
	dst = append(dst, jsonrpcPrefix...)
	dst = append(dst, `"method":`...)
	dst = AppendString(dst, method)
	dst = append(dst, `,"params":`...)
	dst = append(dst, params...)
	dst = append(dst, `,"id":`...)
	dst = AppendString(dst, id)
	return append(dst, '}')
}

// AppendNotification appends a notification. params must be a JSON value.
func AppendNotification(dst []byte, method string, params []byte) []byte {
	dst = append(dst, jsonrpcPrefix...)
	dst = append(dst, `"method":`...)
	dst = AppendString(dst, method)
	dst = append(dst, `,"params":`...)
	dst = append(dst, params...)
	return append(dst, '}')
}

// AppendCloseReason appends a _CloseReason notification carrying e.
func AppendCloseReason(dst []byte, e *Error) []byte {
	dst = append(dst, jsonrpcPrefix...)
	dst = append(dst, `"method":"_CloseReason","params":{"error":`...)
	dst = e.AppendJSON(dst)
	return append(dst, "}}"...)
}

// AppendErrorNotification appends an _Error notification about the message
// with id token rawID (nil when it concerns no particular message).
func AppendErrorNotification(dst, rawID []byte, e *Error) []byte {
	dst = append(dst, jsonrpcPrefix...)
	dst = append(dst, `"method":"_Error","params":{`...)
	if rawID != nil {
		dst = append(dst, `"id":`...)
		dst = append(dst, rawID...)
		dst = append(dst, ',')
	}
	dst = append(dst, `"error":`...)
	dst = e.AppendJSON(dst)
	return append(dst, "}}"...)
}

// Appender is a result that writes its own JSON object, so that hot
// methods skip reflection and an intermediate buffer.
type Appender interface {
	AppendJSON(dst []byte) []byte
}

// MarshalObject encodes v as a JSON object, the only kind of params and
// result the transport allows: json.RawMessage and []byte pass through
// unchanged, nil becomes {}, an Appender writes itself, anything else goes
// through encoding/json.
func MarshalObject(v any) ([]byte, error) {
	var obj []byte
	switch v := v.(type) {
	case nil:
		return EmptyObject, nil
	case json.RawMessage:
		obj = v
	case []byte:
		obj = v
	case Appender:
		obj = v.AppendJSON(nil)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		obj = b
	}
	if i := skipWS(obj, 0); i >= len(obj) || obj[i] != '{' {
		return nil, errNotObject
	}
	return obj, nil
}

var errNotObject = errors.New("value does not encode to a JSON object")
