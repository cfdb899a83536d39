package transport

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every spelling keeps its sign, and every bound is exact: the range's
// ends are accepted and one past them refused, on the plain path and on
// the slow one alike.
func TestParseIntegralSignsAndBounds(t *testing.T) {
	ok := []struct {
		in     string
		lo, hi int64
		want   int64
	}{
		{"-1.0", math.MinInt64, math.MaxInt64, -1},
		{"-12300e-2", math.MinInt64, math.MaxInt64, -123},
		{"-0.5e1", math.MinInt64, math.MaxInt64, -5},
		{"-1E+2", math.MinInt64, math.MaxInt64, -100},
		{"100e-2", math.MinInt64, math.MaxInt64, 1},
		{"1e-0", math.MinInt64, math.MaxInt64, 1},
		{"1e18", math.MinInt64, math.MaxInt64, 1e18},
		{"999999999999999999", math.MinInt64, math.MaxInt64, 999999999999999999},   // 18 digits: plain
		{"1000000000000000000", math.MinInt64, math.MaxInt64, 1000000000000000000}, // 19 digits: slow
		{"9223372036854775807.0", math.MinInt64, math.MaxInt64, math.MaxInt64},
		{"-9223372036854775808.0", math.MinInt64, math.MaxInt64, math.MinInt64},
		{"9.223372036854775807e18", math.MinInt64, math.MaxInt64, math.MaxInt64},
		{"5", 5, 10, 5},
		{"10", 5, 10, 10},
		{"5.0", 5, 10, 5},
		{"10.0", 5, 10, 10},
		{"-5", -5, 5, -5},
		{"-5.0", -5, 5, -5},
		{"0", 0, 0, 0},
	}
	for _, tc := range ok {
		got, err := ParseIntegral([]byte(tc.in), tc.lo, tc.hi)
		if assert.NoError(t, err, tc.in) {
			assert.Equal(t, tc.want, got, tc.in)
		}
	}
	bad := []struct {
		in     string
		lo, hi int64
	}{
		{"4", 5, 10}, {"11", 5, 10}, {"4.0", 5, 10}, {"11.0", 5, 10},
		{"-6", -5, 5}, {"-6.0", -5, 5}, {"6", -5, 5},
		{"9223372036854775808.0", math.MinInt64, math.MaxInt64},
		{"-9223372036854775809.0", math.MinInt64, math.MaxInt64},
		{"1e19", math.MinInt64, math.MaxInt64},
		{"10000000000000000000", math.MinInt64, math.MaxInt64},
		{"18446744073709551616", math.MinInt64, math.MaxInt64},
		{"1.8446744073709551615e19", math.MinInt64, math.MaxInt64},
		{"007", math.MinInt64, math.MaxInt64},
		{"-", math.MinInt64, math.MaxInt64},
		{"1x", math.MinInt64, math.MaxInt64},
		{"-1.5", math.MinInt64, math.MaxInt64},
	}
	for _, tc := range bad {
		_, err := ParseIntegral([]byte(tc.in), tc.lo, tc.hi)
		var pe *ParseError
		assert.ErrorAs(t, err, &pe, tc.in)
	}
}

// A long token is quoted in an error by its first 40 bytes only.
func TestParseIntegralQuotesShort(t *testing.T) {
	long := "1.5" + "000000000000000000000000000000000000000000000001"
	_, err := ParseIntegral([]byte(long), math.MinInt64, math.MaxInt64)
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), long[:40]+"…")
		assert.NotContains(t, err.Error(), long[:41])
	}
	exact := "1.500000000000000000000000000000000000001"[:40]
	_, err = ParseIntegral([]byte(exact), math.MinInt64, math.MaxInt64)
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), exact)
		assert.NotContains(t, err.Error(), "…")
	}
}

// Leading zeros of a fraction do not count towards the 19-digit range:
// 0.000…01e20 is 1.
func TestParseIntegralLeadingFractionZeros(t *testing.T) {
	v, err := ParseIntegral([]byte("0.00000000000000000001e20"), 0, 10)
	require.NoError(t, err)
	assert.Equal(t, int64(1), v)
	v, err = ParseIntegral([]byte("-0.000000000000000000000000000005e30"), -10, 10)
	require.NoError(t, err)
	assert.Equal(t, int64(-5), v)
}
