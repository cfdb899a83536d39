package dispatch

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/skillgate/skillgate/transport"
)

// ParamError is a missing, mistyped or invalid parameter. Its details name
// the parameter, so a client (or an LLM) can fix the call.
type ParamError struct {
	Param  string // JSON name; nested names are dotted ("limits.timeout_ms")
	Reason string
	// NumberRange marks a number outside what the parameter accepts: not
	// an integer, or outside the parameter's documented range. The
	// transport specification makes such a value a parse error that aborts
	// a framed connection; over HTTP it is an ordinary invalid-params error.
	NumberRange bool
}

func (e *ParamError) Error() string { return "parameter " + strconv.Quote(e.Param) + " " + e.Reason }

func (e *ParamError) wire() *transport.Error {
	we := transport.NewError(transport.CodeInvalidParams, "Invalid params.").WithDetails(e.Error())
	we.Extra = map[string][]byte{"param": transport.AppendString(nil, e.Param)}
	return we
}

func paramErr(name, format string) *ParamError { return &ParamError{Param: name, Reason: format} }

type member struct {
	key  []byte
	val  []byte
	used bool
}

// maxParams bounds the members of a params object; no method has half as
// many parameters. A fixed array keeps reading params free of allocation.
const maxParams = 16

// params reads a params object member by member. The first problem is kept
// and reported by err; accessors after it return zero values.
type params struct {
	prefix  string
	members [maxParams]member
	n       int
	err     error
}

func newParams(raw json.RawMessage) params {
	var p params
	p.load(raw, "")
	return p
}

func (p *params) load(raw []byte, prefix string) {
	p.prefix = prefix
	if len(raw) == 0 {
		return
	}
	err := transport.EachMember(raw, func(key, val []byte) error {
		if p.n == maxParams {
			return errTooManyParams
		}
		// A member given twice is refused rather than read first- or
		// last-wins, as the envelope's members are on every front door.
		for i := range p.n {
			if string(p.members[i].key) == string(key) {
				return &ParamError{Param: prefix + string(key), Reason: "is given twice"}
			}
		}
		p.members[p.n] = member{key: key, val: val}
		p.n++
		return nil
	})
	var pe *ParamError
	switch {
	case errors.As(err, &pe):
		p.err = pe
	case errors.Is(err, errTooManyParams):
		p.err = &ParamError{Param: strings.TrimSuffix(prefix, "."), Reason: "has more than " + strconv.Itoa(maxParams) + " members"}
	case err != nil:
		p.err = &ParamError{Param: strings.TrimSuffix(prefix, "."), Reason: "must be a JSON object"}
	}
}

var errTooManyParams = errors.New("too many params")

// get returns the raw value of a present, non-null member.
func (p *params) get(name string) ([]byte, bool) {
	if p.err != nil {
		return nil, false
	}
	for i := range p.n {
		m := &p.members[i]
		if string(m.key) == name {
			m.used = true
			if string(m.val) == "null" {
				return nil, false
			}
			return m.val, true
		}
	}
	return nil, false
}

func (p *params) fail(name, reason string) {
	if p.err == nil {
		p.err = paramErr(p.prefix+name, reason)
	}
}

func (p *params) str(name string, required bool) string {
	v, ok := p.get(name)
	if !ok {
		if required {
			p.fail(name, "is required")
		}
		return ""
	}
	s, isStr := transport.Unquote(v)
	if !isStr {
		p.fail(name, "must be a string, not "+jsonType(v))
	}
	return s
}

// String returns an optional string parameter ("" when absent).
func (p *params) String(name string) string { return p.str(name, false) }

// RequiredString returns a required, non-empty string parameter.
func (p *params) RequiredString(name string) string {
	s := p.str(name, true)
	if p.err == nil && s == "" {
		p.fail(name, "must not be empty")
	}
	return s
}

// Enum returns a string parameter that must be one of allowed, or def.
func (p *params) Enum(name, def string, allowed ...string) string {
	s := p.str(name, false)
	if p.err != nil || s == "" {
		return def
	}
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	p.fail(name, "must be one of "+strings.Join(allowed, ", ")+", not "+strconv.Quote(s))
	return def
}

// Int returns an integer parameter in [lo, hi], or def when absent. A
// number that is not an exact integer, or is outside the range, is never
// coerced: it is a NumberRange error.
func (p *params) Int(name string, def, lo, hi int64) int64 {
	v, ok := p.get(name)
	if !ok {
		return def
	}
	if v[0] != '-' && (v[0] < '0' || v[0] > '9') {
		p.fail(name, "must be an integer, not "+jsonType(v))
		return def
	}
	n, err := transport.ParseIntegral(v, math.MinInt64, math.MaxInt64)
	if err != nil {
		if p.err == nil {
			p.err = &ParamError{Param: p.prefix + name, Reason: "must be an integer, not " + shorten(string(v)), NumberRange: true}
		}
		return def
	}
	if n < lo || n > hi {
		if p.err == nil {
			p.err = &ParamError{Param: p.prefix + name, NumberRange: true,
				Reason: "must be between " + strconv.FormatInt(lo, 10) + " and " + strconv.FormatInt(hi, 10) + ", not " + strconv.FormatInt(n, 10)}
		}
		return def
	}
	return n
}

// Bool returns an optional boolean parameter (false when absent).
func (p *params) Bool(name string) bool {
	v, ok := p.get(name)
	switch {
	case !ok:
		return false
	case string(v) == "true":
		return true
	case string(v) != "false":
		p.fail(name, "must be true or false, not "+jsonType(v))
	}
	return false
}

// Object returns a JSON object parameter as raw JSON (nil when absent).
func (p *params) Object(name string) json.RawMessage {
	v, ok := p.get(name)
	if ok && v[0] != '{' {
		p.fail(name, "must be an object, not "+jsonType(v))
		return nil
	}
	return v
}

// Nested reads an object parameter member by member, for nested names such
// as limits.timeout_ms. Problems are reported through p.
func (p *params) Nested(name string) *params {
	n := &params{}
	if v := p.Object(name); v != nil {
		n.load(v, p.prefix+name+".")
	}
	// The outer reader's problem comes first; without one, the nested
	// object's own (a member given twice, too many members) must stand.
	if p.err != nil {
		n.err = p.err
	}
	return n
}

// Adopt takes over the first error of a nested reader.
func (p *params) Adopt(n *params) {
	if p.err == nil {
		p.err = n.Err()
	}
}

// Strings returns an array-of-strings parameter (nil when absent).
func (p *params) Strings(name string, max int) []string {
	v, ok := p.get(name)
	if !ok {
		return nil
	}
	var raw []json.RawMessage
	if v[0] != '[' || json.Unmarshal(v, &raw) != nil {
		p.fail(name, "must be an array of strings, not "+jsonType(v))
		return nil
	}
	if len(raw) > max {
		p.fail(name, "has "+strconv.Itoa(len(raw))+" entries; at most "+strconv.Itoa(max)+" are allowed")
		return nil
	}
	out := make([]string, 0, len(raw))
	for i, r := range raw {
		s, isStr := transport.Unquote(r)
		if !isStr {
			p.fail(name+"["+strconv.Itoa(i)+"]", "must be a string, not "+jsonType(r))
			return nil
		}
		out = append(out, s)
	}
	return out
}

// Err returns the first problem, including parameters nobody asked for
// (except _meta, which clients may send for their own bookkeeping).
func (p *params) Err() error {
	if p.err != nil {
		return p.err
	}
	for _, m := range p.members[:p.n] {
		if !m.used && string(m.key) != "_meta" {
			return paramErr(p.prefix+string(m.key), "is not a parameter of this method")
		}
	}
	return nil
}

func jsonType(v []byte) string {
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func shorten(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}
