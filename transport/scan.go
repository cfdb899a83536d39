package transport

import (
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds nesting, as encoding/json does, so hostile input cannot
// exhaust memory through the container stack.
const maxDepth = 10000

// ValidJSON reports whether b is exactly one JSON value (RFC 8259) with
// optional surrounding whitespace, in valid UTF-8.
func ValidJSON(b []byte) bool {
	end, err := scanValue(b, skipWS(b, 0))
	return err == nil && skipWS(b, end) == len(b)
}

func skipWS(b []byte, i int) int {
	for i < len(b) && isWS(b[i]) {
		i++
	}
	return i
}

// isWS reports whether c is JSON whitespace (RFC 8259).
func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func syntaxErr(i int, reason string) *ParseError {
	return &ParseError{Offset: i, Reason: reason}
}

// scanValue validates the JSON value starting at b[i] and returns the offset
// just past it. Containers are walked iteratively with an explicit stack.
func scanValue(b []byte, i int) (int, error) {
	var stackBuf [32]byte
	stack := stackBuf[:0]
	var err error
outer:
	for {
		i = skipWS(b, i)
		if i >= len(b) {
			return i, syntaxErr(i, "unexpected end of input")
		}
		switch c := b[i]; c {
		case '{', '[':
			closer := byte('}')
			if c == '[' {
				closer = ']'
			}
			j := skipWS(b, i+1)
			if j < len(b) && b[j] == closer {
				i = j + 1
				break
			}
			if len(stack) >= maxDepth {
				return i, syntaxErr(i, "nesting too deep")
			}
			stack = append(stack, c)
			i = j
			if c == '{' {
				if i, err = scanKey(b, i); err != nil {
					return i, err
				}
			}
			continue outer
		case '"':
			if i, _, err = scanString(b, i); err != nil {
				return i, err
			}
		case 't':
			if i, err = scanLiteral(b, i, "true"); err != nil {
				return i, err
			}
		case 'f':
			if i, err = scanLiteral(b, i, "false"); err != nil {
				return i, err
			}
		case 'n':
			if i, err = scanLiteral(b, i, "null"); err != nil {
				return i, err
			}
		default:
			if c != '-' && (c < '0' || c > '9') {
				return i, syntaxErr(i, "invalid character at start of value")
			}
			if i, err = scanNumber(b, i); err != nil {
				return i, err
			}
		}
		// A value is complete: close containers until one continues.
		for len(stack) > 0 {
			i = skipWS(b, i)
			if i >= len(b) {
				return i, syntaxErr(i, "unexpected end of input")
			}
			top := stack[len(stack)-1]
			switch {
			case b[i] == ',':
				i++
				if top == '{' {
					if i, err = scanKey(b, skipWS(b, i)); err != nil {
						return i, err
					}
				}
				continue outer
			case top == '{' && b[i] == '}', top == '[' && b[i] == ']':
				stack = stack[:len(stack)-1]
				i++
			default:
				return i, syntaxErr(i, "expected ',' or end of container")
			}
		}
		return i, nil
	}
}

// scanKey validates `"key" :` at b[i] and returns the offset after the colon.
func scanKey(b []byte, i int) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return i, syntaxErr(i, "expected object key")
	}
	i, _, err := scanString(b, i)
	if err != nil {
		return i, err
	}
	i = skipWS(b, i)
	if i >= len(b) || b[i] != ':' {
		return i, syntaxErr(i, "expected ':' after object key")
	}
	return i + 1, nil
}

// scanString validates the string starting at the quote b[i] and returns the
// offset past the closing quote and whether it contains escapes.
func scanString(b []byte, i int) (end int, escaped bool, err error) {
	i++
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			if i, err = scanEscape(b, i); err != nil {
				return i, escaped, err
			}
		case c < 0x20:
			return i, escaped, syntaxErr(i, "control character in string")
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return i, escaped, syntaxErr(i, "invalid UTF-8")
			}
			i += size
		}
	}
	return i, escaped, syntaxErr(i, "unterminated string")
}

func scanEscape(b []byte, i int) (int, error) {
	if i+1 >= len(b) {
		return i, syntaxErr(i, "unterminated escape")
	}
	switch b[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 2, nil
	case 'u':
		if i+6 > len(b) {
			return i, syntaxErr(i, "short \\u escape")
		}
		for _, h := range b[i+2 : i+6] {
			if hexVal[h] > 15 {
				return i, syntaxErr(i, "invalid \\u escape")
			}
		}
		return i + 6, nil
	}
	return i, syntaxErr(i, "invalid escape")
}

func scanNumber(b []byte, i int) (int, error) {
	start := i
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = skipDigits(b, i)
	default:
		return i, syntaxErr(start, "invalid number")
	}
	if i < len(b) && b[i] == '.' {
		j := skipDigits(b, i+1)
		if j == i+1 {
			return j, syntaxErr(start, "invalid number: no digits after '.'")
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return j, syntaxErr(start, "invalid number: no digits in exponent")
		}
		i = j
	}
	return i, nil
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

func scanLiteral(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, syntaxErr(i, "invalid literal")
	}
	return i + len(lit), nil
}

// unquote returns the content of a validated JSON string token. Without
// escapes it aliases tok; otherwise the decoded bytes are appended to buf.
// Lone surrogates decode to U+FFFD, as in encoding/json.
func unquote(tok []byte, escaped bool, buf []byte) []byte {
	s := tok[1 : len(tok)-1]
	if !escaped {
		return s
	}
	out := buf[:0]
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			out = append(out, s[i])
			i++
			continue
		}
		switch c := s[i+1]; c {
		case 'u':
			r := rune(hex4(s[i+2:]))
			i += 6
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
					r2 = utf16.DecodeRune(r, rune(hex4(s[i+2:])))
				}
				if r2 != utf8.RuneError {
					i += 6
				}
				r = r2
			}
			out = utf8.AppendRune(out, r)
			continue
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		default: // '"', '\\', '/'
			out = append(out, c)
		}
		i += 2
	}
	return out
}

func hex4(b []byte) uint16 {
	return uint16(hexVal[b[0]])<<12 | uint16(hexVal[b[1]])<<8 | uint16(hexVal[b[2]])<<4 | uint16(hexVal[b[3]])
}

// AppendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, so
// the output is always valid.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, `\n`...)
		case '\r':
			dst = append(dst, `\r`...)
		case '\t':
			dst = append(dst, `\t`...)
		default:
			dst = append(dst, `\u00`...)
			dst = append(dst, hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
