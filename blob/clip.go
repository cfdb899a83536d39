package blob

import "unicode/utf8"

// maxActualLen caps client-given strings quoted in errors, so one
// oversized id cannot blow up a response.
const maxActualLen = 200

// clipActual shortens a long string quoted in an error.
func clipActual(s string) string {
	if len(s) <= maxActualLen {
		return s
	}
	cut := maxActualLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
