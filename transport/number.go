package transport

// ParseIntegral parses a JSON number token that must denote an integer in
// [lo, hi]. Every spelling of an integer is accepted ("123", "123.00",
// "12300e-2", "0.123E+3"); a number with a fractional part ("3.0001") or
// outside the range is a *ParseError and is never truncated, rounded or
// clamped, as the transport specification requires.
func ParseIntegral(tok []byte, lo, hi int64) (int64, error) {
	if v, ok := plainInt(tok); ok {
		return clampCheck(v, lo, hi, tok)
	}
	neg, digits, exp, ok := splitNumber(tok)
	if !ok {
		return 0, syntaxErr(0, "invalid number "+quoteShort(tok))
	}
	// Normalise to digits × 10^exp with no leading or trailing zeros.
	for len(digits) > 0 && digits[0] == '0' {
		digits = digits[1:]
	}
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		exp++
	}
	if len(digits) == 0 {
		return clampCheck(0, lo, hi, tok)
	}
	if exp < 0 {
		return 0, syntaxErr(0, "number "+quoteShort(tok)+" is not an integer")
	}
	if int64(len(digits))+exp > 19 {
		return 0, syntaxErr(0, "number "+quoteShort(tok)+" is out of range")
	}
	var u uint64
	for _, d := range digits {
		u = u*10 + uint64(d-'0')
	}
	// At most 19 digits in all (checked above): u stays below 10^19, which
	// a uint64 holds.
	for ; exp > 0; exp-- {
		u *= 10
	}
	if u > 1<<63 || (u == 1<<63 && !neg) {
		return 0, syntaxErr(0, "number "+quoteShort(tok)+" is out of range")
	}
	v := int64(u)
	if neg {
		v = -v
	}
	return clampCheck(v, lo, hi, tok)
}

// plainInt parses the common spelling, an optional minus and up to 18
// digits without leading zeros, without allocating.
func plainInt(tok []byte) (int64, bool) {
	digits := tok
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 || (digits[0] == '0' && len(digits) > 1) {
		return 0, false
	}
	var v int64
	for _, d := range digits {
		if d < '0' || d > '9' {
			return 0, false
		}
		v = v*10 + int64(d-'0')
	}
	if tok[0] == '-' {
		v = -v
	}
	return v, true
}

func clampCheck(v, lo, hi int64, tok []byte) (int64, error) {
	if v < lo || v > hi {
		return 0, syntaxErr(0, "number "+quoteShort(tok)+" is out of range")
	}
	return v, nil
}

// splitNumber splits a JSON number into sign, significant digits (integer
// and fraction concatenated) and the decimal exponent applying to them.
// Exponents are saturated so that absurd values cannot overflow.
func splitNumber(tok []byte) (neg bool, digits []byte, exp int64, ok bool) {
	end, err := scanNumberToken(tok)
	if err != nil || end != len(tok) {
		return false, nil, 0, false
	}
	i := 0
	if tok[0] == '-' {
		neg, i = true, 1
	}
	intEnd := skipDigits(tok, i)
	digits = append(digits, tok[i:intEnd]...)
	i = intEnd
	if i < len(tok) && tok[i] == '.' {
		fracEnd := skipDigits(tok, i+1)
		digits = append(digits, tok[i+1:fracEnd]...)
		exp -= int64(fracEnd - i - 1)
		i = fracEnd
	}
	if i < len(tok) {
		exp += parseExponent(tok[i+1:])
	}
	return neg, digits, exp, true
}

func scanNumberToken(tok []byte) (int, error) {
	if len(tok) == 0 {
		return 0, syntaxErr(0, "empty number")
	}
	return scanNumber(tok, 0)
}

func parseExponent(e []byte) int64 {
	neg := false
	if len(e) > 0 && (e[0] == '+' || e[0] == '-') {
		neg = e[0] == '-'
		e = e[1:]
	}
	var n int64
	for _, d := range e {
		if n < 1<<40 {
			n = n*10 + int64(d-'0')
		}
	}
	if neg {
		return -n
	}
	return n
}

func quoteShort(tok []byte) string {
	if len(tok) > 40 {
		return string(tok[:40]) + "…"
	}
	return string(tok)
}
