package dispatch

import (
	"bytes"
	"encoding/base64"
	"unicode/utf8"
)

// Content encodings of file and blob payloads.
const (
	EncodingUTF8   = "utf-8"
	EncodingBase64 = "base64"
)

// responseOverhead is room kept for everything of a response but its
// content: envelope, id, metadata fields.
const responseOverhead = 4096

// isText reports whether data can travel as a JSON string as it is.
func isText(data []byte) bool {
	return utf8.Valid(data) && bytes.IndexByte(data, 0) < 0
}

// jsonStringLen is the length of data once written as a JSON string body.
func jsonStringLen(data []byte) int {
	n := 0
	for _, c := range data {
		switch {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n += 2
		case c < 0x20:
			n += 6
		default:
			n++
		}
	}
	return n
}

// fitText returns the longest prefix of a UTF-8 text whose JSON encoding
// fits budget bytes, never splitting a character.
func fitText(data []byte, budget int) []byte {
	if jsonStringLen(data) <= budget {
		return data
	}
	n, used := 0, 0
	for n < len(data) {
		_, size := utf8.DecodeRune(data[n:])
		cost := jsonStringLen(data[n : n+size])
		if used+cost > budget {
			break
		}
		used += cost
		n += size
	}
	return data[:n]
}

// payload is file or blob content ready for a JSON response.
type payload struct {
	Content  string
	Encoding string
}

// encodePayload encodes data as text when it is text (and text is allowed)
// or as base64 otherwise, keeping the encoded form within budget bytes. It
// returns how many bytes of data were encoded.
func encodePayload(data []byte, preferText bool, budget int) (payload, int) {
	if preferText && isText(data) {
		chunk := fitText(data, budget)
		return payload{Content: string(chunk), Encoding: EncodingUTF8}, len(chunk)
	}
	n := min(len(data), base64.StdEncoding.DecodedLen(budget))
	if n < len(data) {
		n -= n % 3 // a cut chunk carries no padding, so chunks concatenate
	}
	return payload{Content: base64.StdEncoding.EncodeToString(data[:n]), Encoding: EncodingBase64}, n
}
