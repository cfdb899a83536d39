package skills

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/rs/zerolog"
)

// maxActualLen caps string values quoted in violations so one oversized
// field cannot flood a log line.
const maxActualLen = 200

// Violation is one problem found in a skill package, in the shape of the
// VALIDATION_ERROR details of the error classes spec: Field is a JSON pointer
// into the document named by File ("skill.toml", "SKILL.md", a file path, or
// empty for the package as a whole), Actual is the offending value (nil when
// missing).
type Violation struct {
	File     string `json:"file,omitempty"`
	Field    string `json:"field"`
	Expected string `json:"expected"`
	Actual   any    `json:"actual"`
	Message  string `json:"message"`
}

// String renders "file:field: message (expected E, got A)".
func (v Violation) String() string {
	var b strings.Builder
	if v.File != "" {
		b.WriteString(v.File)
		b.WriteByte(':')
	}
	b.WriteString(v.Field)
	fmt.Fprintf(&b, ": %s (expected %s, got %v)", v.Message, v.Expected, v.Actual)
	return b.String()
}

// MarshalZerologObject logs a violation as a structured object.
func (v Violation) MarshalZerologObject(e *zerolog.Event) {
	if v.File != "" {
		e.Str("file", v.File)
	}
	e.Str("field", v.Field).Str("expected", v.Expected).Interface("actual", v.Actual).Str("message", v.Message)
}

// Violations is a list that logs as a zerolog array.
type Violations []Violation

// MarshalZerologArray logs each violation as an object.
func (vs Violations) MarshalZerologArray(a *zerolog.Array) {
	for _, v := range vs {
		a.Object(v)
	}
}

// clipActual shortens long strings quoted in a violation.
func clipActual(v any) any {
	s, ok := v.(string)
	if !ok || len(s) <= maxActualLen {
		return v
	}
	cut := maxActualLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// collector accumulates the violations of one document.
type collector struct {
	file string
	list []Violation
}

func (c *collector) add(field, expected string, actual any, format string, args ...any) {
	c.list = append(c.list, Violation{
		File: c.file, Field: field, Expected: expected,
		Actual: clipActual(actual), Message: fmt.Sprintf(format, args...),
	})
}

// pointer joins JSON pointer tokens, escaping "~" and "/" per RFC 6901.
func pointer(base string, token string) string {
	token = strings.ReplaceAll(token, "~", "~0")
	token = strings.ReplaceAll(token, "/", "~1")
	return base + "/" + token
}
