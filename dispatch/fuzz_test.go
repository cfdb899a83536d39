package dispatch

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzParams: whatever the params, the accessors never panic, and an
// accepted integer is exactly what the JSON said.
func FuzzParams(f *testing.F) {
	for _, s := range []string{`{}`, `{"limit":2.00}`, `{"limit":1e400}`, `{"name":"x","limits":{"timeout_ms":5}}`,
		`{"input_blobs":["a",1]}`, `{"a":null}`, `[]`, `{"name":"\u00e4"}`, `{"cursor":{}}`,
		`{"limit":0}`, `{"limit":1001}`, `{"limit":2147483648}`, `{"limit":-1e2}`, `{"limits":{"timeout_ms":-1}}`, `{"limit":1,"limit":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p := newParams(raw)
		_ = p.String("name")
		_ = p.Enum("detail", "summary", "names", "summary")
		n := p.Int("limit", 50, 1, 1000)
		require.True(t, n >= 1 && n <= 1000)
		// A number the range refuses is a NumberRange error, which aborts
		// a framed connection as the transport specification requires.
		var pe *ParamError
		if errors.As(p.err, &pe) && pe.Param == "limit" && pe.Reason != "is given twice" {
			var v []byte
			for _, m := range p.members[:p.n] {
				if string(m.key) == "limit" {
					v = m.val
				}
			}
			require.Equal(t, len(v) > 0 && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9')), pe.NumberRange, "%s", raw)
		}
		_ = p.Strings("input_blobs", 10)
		nested := p.Nested("limits")
		_ = nested.Int("timeout_ms", 0, 0, 1<<40)
		p.Adopt(nested)
		_ = p.Err()
	})
}
