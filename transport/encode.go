package transport

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
