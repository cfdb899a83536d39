package transport

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// Kind is the type of a transport message.
type Kind uint8

// Message kinds.
const (
	KindRequest      Kind = iota + 1 // method and id
	KindNotification                 // method without id
	KindResult                       // id and result
	KindError                        // id and error
)

func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	case KindResult:
		return "result"
	case KindError:
		return "error"
	}
	return "invalid"
}

// Transport-level method names.
const (
	MethodKeepalive   = "_Keepalive"
	MethodCloseReason = "_CloseReason"
	MethodError       = "_Error"
	MethodInfo        = "_Info"
)

// Message is a decoded, validated transport message. Its byte slices alias
// the frame body it was decoded from (an id or method name written with
// escapes is decoded into a slice of its own) and are valid only as long as
// the body is. A Message holds no pointer into itself, so one declared in a
// loop stays on the stack.
type Message struct {
	Kind   Kind
	RawID  []byte // the id as its JSON string token, quotes included
	ID     []byte // the id's decoded content
	Method []byte // decoded method name
	Params []byte // raw JSON; an object for requests
	Result []byte // raw JSON object
	Error  *Error // decoded error object, for KindError
}

// envelope holds the spans of the top-level members the transport knows.
type envelope struct {
	jsonrpc, id, method, params, result, err []byte
	idEsc, methodEsc, jsonrpcEsc             bool
	duplicate                                string
}

// Decode parses and validates body as one transport message. A *ParseError
// means the body is not valid JSON, has whitespace before or after its
// value, or carries a number out of range; an *InvalidMessageError means it is JSON but no valid message. Both require
// aborting the connection. Decode does not allocate for well-formed
// requests, notifications and results.
func Decode(body []byte, m *Message) error {
	*m = Message{}
	if err := checkEdges(body); err != nil {
		return err
	}
	var env envelope
	if err := scanEnvelope(body, &env); err != nil {
		return err
	}
	if env.duplicate != "" {
		return &InvalidMessageError{Reason: "duplicate member " + strconv.Quote(env.duplicate)}
	}
	if err := checkVersion(&env); err != nil {
		return err
	}
	if env.method != nil {
		return m.decodeCall(&env)
	}
	return m.decodeResponse(&env)
}

// checkEdges refuses a body with whitespace before or after its JSON
// value: the framing carries the message "with no leading or trailing
// whitespace", so such a body is a framing error, not a message that a
// lenient JSON reader would accept.
func checkEdges(body []byte) error {
	switch {
	case len(body) == 0:
		return syntaxErr(0, "empty message")
	case skipWS(body, 0) != 0:
		return syntaxErr(0, "leading whitespace before the message")
	case isWS(body[len(body)-1]):
		return syntaxErr(len(body)-1, "trailing whitespace after the message")
	}
	return nil
}

func checkVersion(env *envelope) error {
	if env.jsonrpc == nil {
		return &InvalidMessageError{Reason: `missing "jsonrpc"`}
	}
	var buf [8]byte
	if env.jsonrpc[0] != '"' || string(unquote(env.jsonrpc, env.jsonrpcEsc, buf[:0])) != "2.0" {
		return &InvalidMessageError{Reason: `"jsonrpc" must be "2.0"`}
	}
	return nil
}

func (m *Message) decodeCall(env *envelope) error {
	if env.method[0] != '"' {
		return &InvalidMessageError{Reason: `"method" must be a string`}
	}
	if env.result != nil || env.err != nil {
		return &InvalidMessageError{Reason: `a message with "method" must not carry "result" or "error"`}
	}
	m.Method = unquote(env.method, env.methodEsc, nil)
	if env.id == nil {
		m.Kind, m.Params = KindNotification, env.params
		return nil
	}
	if err := m.setID(env); err != nil {
		return err
	}
	if env.params == nil {
		return &InvalidMessageError{Reason: `request lacks "params" (send {} when empty)`}
	}
	if env.params[0] != '{' {
		return &InvalidMessageError{Reason: `"params" must be an object`}
	}
	m.Kind, m.Params = KindRequest, env.params
	return nil
}

func (m *Message) setID(env *envelope) error {
	if env.id[0] != '"' {
		return &InvalidMessageError{Reason: `"id" must be a string`}
	}
	m.RawID = env.id
	m.ID = unquote(env.id, env.idEsc, nil)
	return nil
}

func (m *Message) decodeResponse(env *envelope) error {
	if env.id == nil {
		return &InvalidMessageError{Reason: `message has neither "method" nor "id"`}
	}
	if err := m.setID(env); err != nil {
		return err
	}
	switch {
	case env.result != nil && env.err != nil:
		return &InvalidMessageError{Reason: `response carries both "result" and "error"`}
	case env.result != nil:
		if env.result[0] != '{' {
			return &InvalidMessageError{Reason: `"result" must be an object`}
		}
		m.Kind, m.Result = KindResult, env.result
		return nil
	case env.err != nil:
		e, err := DecodeError(env.err)
		if err != nil {
			return err
		}
		m.Kind, m.Error = KindError, e
		return nil
	}
	return &InvalidMessageError{Reason: `response carries neither "result" nor "error"`}
}

// IsMethod reports whether the message calls the named method.
func (m *Message) IsMethod(name string) bool { return string(m.Method) == name }

// scanEnvelope validates body as JSON and records the top-level members.
func scanEnvelope(body []byte, env *envelope) error {
	i := skipWS(body, 0)
	if i >= len(body) {
		return syntaxErr(i, "empty message")
	}
	if body[i] != '{' {
		end, err := scanValue(body, i)
		if err != nil {
			return err
		}
		if skipWS(body, end) != len(body) {
			return syntaxErr(end, "data after the JSON value")
		}
		if body[i] == '[' {
			return &InvalidMessageError{Reason: "batches are not supported"}
		}
		return &InvalidMessageError{Reason: "message is not a JSON object"}
	}
	end, err := forEachMember(body, i, env.record)
	if err != nil {
		return err
	}
	if skipWS(body, end) != len(body) {
		return syntaxErr(end, "data after the JSON value")
	}
	return nil
}

func (env *envelope) record(key []byte, keyEsc bool, val []byte, valEsc bool) {
	var buf [16]byte
	if keyEsc {
		key = unquote(key, true, buf[:0])
	} else {
		key = key[1 : len(key)-1]
	}
	var slot *[]byte
	switch string(key) {
	case "jsonrpc":
		slot, env.jsonrpcEsc = &env.jsonrpc, valEsc
	case "id":
		slot, env.idEsc = &env.id, valEsc
	case "method":
		slot, env.methodEsc = &env.method, valEsc
	case "params":
		slot = &env.params
	case "result":
		slot = &env.result
	case "error":
		slot = &env.err
	default:
		return // unknown members (e.g. the deprecated response_to) are ignored
	}
	if *slot != nil && env.duplicate == "" {
		env.duplicate = string(key)
	}
	*slot = val
}

// forEachMember validates the object at b[i] and calls fn with each member's
// key token and value span. It returns the offset past the object.
func forEachMember(b []byte, i int, fn func(key []byte, keyEsc bool, val []byte, valEsc bool)) (int, error) {
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, syntaxErr(i, "expected object key")
		}
		keyEnd, keyEsc, err := scanString(b, i)
		if err != nil {
			return keyEnd, err
		}
		key := b[i:keyEnd]
		i = skipWS(b, keyEnd)
		if i >= len(b) || b[i] != ':' {
			return i, syntaxErr(i, "expected ':' after object key")
		}
		i = skipWS(b, i+1)
		valStart := i
		valEsc := false
		if i < len(b) && b[i] == '"' {
			i, valEsc, err = scanString(b, i)
		} else {
			i, err = scanValue(b, i)
		}
		if err != nil {
			return i, err
		}
		fn(key, keyEsc, b[valStart:i], valEsc)
		i = skipWS(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return i + 1, nil
		}
		return i, syntaxErr(i, "expected ',' or '}' in object")
	}
}

// DecodeError decodes and validates a JSON-RPC error object as the
// transport specification requires of a receiver: integer code in the int32
// range, string message, optional object data with a string string_code of
// at most 64 characters and a string details. Other data members are kept.
func DecodeError(obj []byte) (*Error, error) {
	if len(obj) == 0 || obj[0] != '{' {
		return nil, &InvalidMessageError{Reason: `"error" must be an object`}
	}
	var (
		code, msg, data []byte
		msgEsc          bool
	)
	_, err := forEachMember(obj, 0, func(key []byte, keyEsc bool, val []byte, valEsc bool) {
		switch string(unquote(key, keyEsc, nil)) {
		case "code":
			code = val
		case "message":
			msg, msgEsc = val, valEsc
		case "data":
			data = val
		}
	})
	if err != nil {
		return nil, err
	}
	e := &Error{}
	if err := e.setCodeAndMessage(code, msg, msgEsc); err != nil {
		return nil, err
	}
	if data != nil {
		if err := e.decodeData(data); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (e *Error) setCodeAndMessage(code, msg []byte, msgEsc bool) error {
	if code == nil || msg == nil {
		return &InvalidMessageError{Reason: `error object needs "code" and "message"`}
	}
	if !isNumber(code) {
		return &InvalidMessageError{Reason: `error "code" must be a number`}
	}
	n, err := ParseIntegral(code, math.MinInt32, math.MaxInt32)
	if err != nil {
		return err
	}
	if msg[0] != '"' {
		return &InvalidMessageError{Reason: `error "message" must be a string`}
	}
	e.Code = int32(n)
	e.Message = string(unquote(msg, msgEsc, nil))
	return nil
}

func (e *Error) decodeData(data []byte) error {
	if data[0] != '{' {
		return &InvalidMessageError{Reason: `error "data" must be an object`}
	}
	var bad string
	_, err := forEachMember(data, 0, func(key []byte, keyEsc bool, val []byte, valEsc bool) {
		k := string(unquote(key, keyEsc, nil))
		switch {
		case k == "retry" && e.Retry == nil && decodeRetry(val, e):
		case k == "string_code" || k == "details":
			if val[0] != '"' {
				bad = k + " must be a string"
				return
			}
			s := string(unquote(val, valEsc, nil))
			if k == "details" {
				e.Details = s
			} else if utf8.RuneCountInString(s) > MaxStringCodeLen {
				bad = "string_code is longer than 64 characters"
			} else {
				e.StringCode = s
			}
		default:
			if e.Extra == nil {
				e.Extra = make(map[string][]byte)
			}
			e.Extra[k] = bytes.Clone(val)
		}
	})
	if err != nil {
		return err
	}
	if bad != "" {
		return &InvalidMessageError{Reason: "error data: " + bad}
	}
	return nil
}

func isNumber(v []byte) bool {
	return len(v) > 0 && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9'))
}

// EachMember validates the JSON object obj and calls fn with each member's
// decoded key and raw value, stopping at the first error fn returns.
func EachMember(obj []byte, fn func(key, val []byte) error) error {
	i := skipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return &InvalidMessageError{Reason: "not a JSON object"}
	}
	var ferr error
	end, err := forEachMember(obj, i, func(key []byte, keyEsc bool, val []byte, _ bool) {
		if ferr == nil {
			ferr = fn(unquote(key, keyEsc, nil), val)
		}
	})
	if err != nil {
		return err
	}
	if skipWS(obj, end) != len(obj) {
		return syntaxErr(end, "data after the JSON value")
	}
	return ferr
}

// Unquote returns the content of a JSON string token, or false when tok is
// not a valid JSON string.
func Unquote(tok []byte) (string, bool) {
	if len(tok) == 0 || tok[0] != '"' {
		return "", false
	}
	end, esc, err := scanString(tok, 0)
	if err != nil || end != len(tok) {
		return "", false
	}
	return string(unquote(tok, esc, nil)), true
}

// decodeRetry reads data.retry when it has the gateway's shape; anything
// else stays an extra member.
func decodeRetry(val []byte, e *Error) bool {
	var r Retry
	dec := json.NewDecoder(bytes.NewReader(val))
	dec.DisallowUnknownFields()
	if dec.Decode(&r) != nil {
		return false
	}
	e.Retry = &r
	return true
}
