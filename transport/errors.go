package transport

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Field caps that keep every error message the gateway writes small enough
// for any peer that accepts the minimum message size.
const (
	MaxStringCodeLen = 64
	MaxMessageLen    = 1024
	MaxDetailsLen    = 8192
	// MinMessageSize is the smallest message size limit the gateway accepts:
	// an error with capped fields and bounded extra data always fits in it.
	MinMessageSize = 16 << 10
	maxExtraLen    = 4096
)

// Retry is the hint attached to retryable errors.
type Retry struct {
	SuggestedDelayMS int64 `json:"suggested_delay_ms"`
	MaxAttempts      int   `json:"max_attempts"`
}

// Error is a JSON-RPC error object with the transport's data extensions. It
// is both the Go error the gateway passes around and its wire form.
type Error struct {
	Code       int32
	Message    string
	StringCode string // data.string_code; empty means derived from Code
	Details    string // data.details
	Retry      *Retry // data.retry
	// Extra holds further data members as raw JSON values, keyed by name.
	Extra map[string][]byte
}

func (e *Error) Error() string {
	sc := e.EffectiveCode()
	if e.Details != "" {
		return fmt.Sprintf("%s (%d): %s: %s", sc, e.Code, e.Message, e.Details)
	}
	return fmt.Sprintf("%s (%d): %s", sc, e.Code, e.Message)
}

// Is makes errors.Is match two Errors with the same effective string code,
// which is how the specification says errors are told apart.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.EffectiveCode() == e.EffectiveCode()
}

// EffectiveCode returns data.string_code when present, else the string code
// mapped from the numeric code, as an error receiver must process it.
func (e *Error) EffectiveCode() string {
	if e.StringCode != "" {
		return e.StringCode
	}
	return StringCodeFor(e.Code)
}

// NewError returns an Error with the given numeric code and the string code
// the specification maps it to.
func NewError(code int32, message string) *Error {
	return &Error{Code: code, Message: message, StringCode: StringCodeFor(code)}
}

// AppError returns an application error (code 1) with a string code.
func AppError(stringCode, message string) *Error {
	return &Error{Code: CodeApplication, Message: message, StringCode: stringCode}
}

// WithDetails returns a copy of e carrying details.
func (e *Error) WithDetails(details string) *Error {
	c := *e
	c.Details = details
	return &c
}

// WithRetry returns a copy of e carrying a retry hint.
func (e *Error) WithRetry(delayMS int64, attempts int) *Error {
	c := *e
	c.Retry = &Retry{SuggestedDelayMS: delayMS, MaxAttempts: attempts}
	return &c
}

// WithRetryHint returns a copy of e carrying the hint r, for a condition
// whose hint is defined once and sent by several layers.
func (e *Error) WithRetryHint(r Retry) *Error {
	c := *e
	c.Retry = &r
	return &c
}

// WithInt returns a copy of e whose data carries the integer member name,
// for the values a peer may act on (a limit, what went past it).
func (e *Error) WithInt(name string, v int64) *Error {
	c := *e
	c.Extra = make(map[string][]byte, len(e.Extra)+1)
	for k, raw := range e.Extra {
		c.Extra[k] = raw
	}
	c.Extra[name] = strconv.AppendInt(nil, v, 10)
	return &c
}

// AppendJSON appends the error object to dst, truncating message, details
// and string_code to their caps and dropping extra data that would make the
// object larger than MinMessageSize allows.
func (e *Error) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(e.Code), 10)
	dst = append(dst, `,"message":`...)
	dst = AppendString(dst, e.WireMessage())
	dst = append(dst, `,"data":`...)
	dst = e.AppendData(dst)
	return append(dst, '}')
}

// WireMessage is the message as AppendJSON sends it, cut to MaxMessageLen.
func (e *Error) WireMessage() string { return truncateUTF8(e.Message, MaxMessageLen) }

// AppendData appends the error's data object as AppendJSON sends it
// (string_code, details, retry and the extra members), for a front door
// whose own library writes the rest of the error.
func (e *Error) AppendData(dst []byte) []byte {
	dst = append(dst, `{"string_code":`...)
	dst = AppendString(dst, truncateRunes(e.EffectiveCode(), MaxStringCodeLen))
	if e.Details != "" {
		dst = append(dst, `,"details":`...)
		dst = AppendString(dst, truncateUTF8(e.Details, MaxDetailsLen))
	}
	if e.Retry != nil {
		dst = append(dst, `,"retry":{"suggested_delay_ms":`...)
		dst = strconv.AppendInt(dst, e.Retry.SuggestedDelayMS, 10)
		dst = append(dst, `,"max_attempts":`...)
		dst = strconv.AppendInt(dst, int64(e.Retry.MaxAttempts), 10)
		dst = append(dst, '}')
	}
	dst = e.appendExtra(dst)
	return append(dst, '}')
}

func (e *Error) appendExtra(dst []byte) []byte {
	budget := maxExtraLen
	for _, k := range sortedKeys(e.Extra) {
		v := e.Extra[k]
		if reservedDataKey(k) || !ValidJSON(v) {
			continue
		}
		if budget -= len(k) + len(v) + 4; budget < 0 {
			break
		}
		dst = append(dst, ',')
		dst = AppendString(dst, k)
		dst = append(dst, ':')
		dst = append(dst, v...)
	}
	return dst
}

func reservedDataKey(k string) bool {
	return k == "string_code" || k == "details" || k == "retry"
}

// truncateUTF8 cuts s to at most n bytes without splitting a character and
// marks the cut.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…[truncated]"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for count := 0; count < n; count++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

// FrameErrorKind says what was wrong with a frame.
type FrameErrorKind uint8

// Frame error kinds.
const (
	FrameBadLength FrameErrorKind = iota + 1 // the 8 length characters are not hex digits
	FrameNoColon                             // the ninth byte is not ':'
	FrameNoNewline                           // the byte after the body is not '\n'
	FrameTooLarge                            // the declared length exceeds the limit
	FrameTimeout                             // a begun frame did not complete in time
)

// FrameError reports invalid framing. The connection must be aborted with a
// parse error.
type FrameError struct {
	Kind   FrameErrorKind
	Header string // the offending header bytes, for bad headers
	Length int    // declared body length
	Limit  int    // size limit, or the timeout in milliseconds
}

func (e *FrameError) Error() string {
	switch e.Kind {
	case FrameBadLength:
		return fmt.Sprintf("frame length %q is not 8 hex digits", e.Header[:8])
	case FrameNoColon:
		return fmt.Sprintf("frame header %q lacks ':' after the length", e.Header)
	case FrameNoNewline:
		return fmt.Sprintf("frame of %d bytes is not followed by a newline", e.Length)
	case FrameTooLarge:
		return fmt.Sprintf("frame of %d bytes exceeds the limit of %d", e.Length, e.Limit)
	case FrameTimeout:
		return fmt.Sprintf("frame not completed within %d ms", e.Limit)
	}
	return "invalid frame"
}

// abortError is the _CloseReason error of invalid framing; its data names
// the limit the frame broke, where there is one.
func (e *FrameError) abortError() *Error {
	we := NewError(CodeParseError, "Parse error.").WithDetails(e.Error())
	switch e.Kind {
	case FrameTooLarge:
		return we.WithInt("frame_bytes", int64(e.Length)).WithInt("max_message_size", int64(e.Limit))
	case FrameTimeout:
		return we.WithInt("frame_timeout_ms", int64(e.Limit))
	}
	return we
}

// ParseError is a body that is not valid UTF-8 JSON, or a number outside the
// range the receiver accepts. The connection must be aborted with -32700.
type ParseError struct {
	Offset int
	Reason string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Reason)
}

// InvalidMessageError is well-formed JSON that is not a valid message of the
// transport. The connection must be aborted with -32600.
type InvalidMessageError struct {
	Reason string
}

func (e *InvalidMessageError) Error() string { return "invalid message: " + e.Reason }

// AbortError converts a decoding or framing error into the error object of
// the _CloseReason that aborts the connection.
func AbortError(err error) *Error {
	var (
		fe *FrameError
		pe *ParseError
		ie *InvalidMessageError
	)
	switch {
	case errors.As(err, &fe):
		return fe.abortError()
	case errors.As(err, &pe):
		return NewError(CodeParseError, "Parse error.").WithDetails(err.Error()).WithInt("offset", int64(pe.Offset))
	case errors.As(err, &ie):
		return NewError(CodeInvalidRequest, "Invalid request.").WithDetails(err.Error())
	}
	return NewError(CodeParseError, "Parse error.").WithDetails(err.Error())
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
