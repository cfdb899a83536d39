package dispatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// FuzzParams checks the params reader against encoding/json as an oracle:
// params it accepts are a JSON object whose name is the string
// encoding/json decodes and whose limit is exactly the number the JSON
// spells, inside the range; and an object encoding/json reads as a valid
// name and limit is accepted. Neither holds by construction: the reader
// has a scanner, an unquoter and a number parser of its own.
func FuzzParams(f *testing.F) {
	for _, s := range []string{`{}`, `{"limit":2.00}`, `{"limit":1e400}`, `{"name":"x","limits":{"timeout_ms":5}}`,
		`{"input_blobs":["a",1]}`, `{"a":null}`, `[]`, `{"name":"\u00e4"}`, `{"cursor":{}}`,
		`{"limit":0}`, `{"limit":1001}`, `{"limit":2147483648}`, `{"limit":-1e2}`, `{"limits":{"timeout_ms":-1}}`, `{"limit":1,"limit":2}`,
		`{"name":"a\"b\\u00e9\ud83d\ude00","limit":12300e-2}`, `{"n\u0061me":"y","limit":0.5e1}`, `{"limit":1000.0000000000000000001}`,
		`{"name":null,"limit":null}`, `{"name":1}`, `{"limit":"5"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p := newParams(raw)
		name := p.String("name")
		n := p.Int("limit", 50, 1, 1000)
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
		accepted := p.Err() == nil
		if json.Valid(raw) && utf8.Valid(raw) {
			checkParamsOracle(t, raw, accepted, name, n)
		}
		_ = p.Enum("detail", "summary", "names", "summary")
		_ = p.Strings("input_blobs", 10)
		nested := p.Nested("limits")
		_ = nested.Int("timeout_ms", 0, 0, 1<<40)
		p.Adopt(nested)
		_ = p.Err()
	})
}

// checkParamsOracle compares what params made of raw (valid JSON) with
// encoding/json's reading of it.
func checkParamsOracle(t *testing.T, raw []byte, accepted bool, name string, limit int64) {
	members, isObject := jsonMembers(raw)
	dup := false
	seen := map[string]bool{}
	for _, m := range members {
		dup = dup || seen[m.key]
		seen[m.key] = true
	}
	wantName, nameOK := "", true
	wantLimit, limitOK := int64(50), true
	onlyKnown := true
	for _, m := range members {
		switch {
		case string(m.val) == "null":
		case m.key == "name":
			nameOK = json.Unmarshal(m.val, &wantName) == nil
		case m.key == "limit":
			var known bool
			wantLimit, limitOK, known = exactInt(m.val)
			if !known {
				return
			}
			limitOK = limitOK && wantLimit >= 1 && wantLimit <= 1000
		}
		onlyKnown = onlyKnown && (m.key == "name" || m.key == "limit")
	}
	if accepted {
		require.True(t, isObject && !dup && len(members) <= maxParams, "accepted %s", raw)
		require.True(t, nameOK && limitOK, "accepted %s", raw)
		require.Equal(t, wantName, name, "%s", raw)
		require.Equal(t, wantLimit, limit, "%s", raw)
	}
	if isObject && !dup && onlyKnown && nameOK && limitOK {
		require.True(t, accepted, "refused %s", raw)
	}
}

type jsonMember struct {
	key string
	val json.RawMessage
}

// jsonMembers lists the members of a top-level JSON object in order,
// duplicates included (encoding/json's maps would keep the last).
func jsonMembers(raw []byte) ([]jsonMember, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var out []jsonMember
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var m jsonMember
		m.key, _ = tok.(string)
		if err := dec.Decode(&m.val); err != nil {
			return nil, false
		}
		out = append(out, m)
	}
	return out, true
}

// exactInt is the integer a JSON number denotes, if it is one that fits
// an int64 (by exact rational arithmetic, not float). known is false for
// a number too costly to decide.
func exactInt(v []byte) (n int64, ok, known bool) {
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return 0, false, true
	}
	// big.Rat would spend memory without bound on a huge exponent.
	if i := bytes.IndexAny(v, "eE"); i >= 0 {
		if e, err := strconv.Atoi(strings.TrimPrefix(string(v[i+1:]), "+")); err != nil || e > 1000 || e < -1000 {
			return 0, false, false
		}
	}
	r, isNum := new(big.Rat).SetString(string(v))
	if !isNum || !r.IsInt() || !r.Num().IsInt64() {
		return 0, false, true
	}
	return r.Num().Int64(), true, true
}
