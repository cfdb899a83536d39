package dispatch

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/transport"
)

// membersJSON is an object of n members k0..k(n-1), after lead.
func membersJSON(lead string, n int) string {
	parts := []string{}
	if lead != "" {
		parts = append(parts, lead)
	}
	for i := range n {
		parts = append(parts, fmt.Sprintf(`"k%d":1`, i))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// A params object, or a nested one, holds at most 16 members: at 16 the
// call goes on to name the member no method knows, at 17 it is refused
// as too large. A member given twice is named with its dotted path.
func TestParamsMembersBounds(t *testing.T) {
	e, _ := newExecEnv(t, completed(`{}`))
	const ip = transport.StringInvalidParams
	run := `"language":"python","code":"x"`
	for _, c := range e.fronts() {
		for _, tc := range []paramCase{
			{"list_skills", membersJSON("", 16), ip, "k0"},
			{"list_skills", membersJSON("", 17), ip, ""},
			{"run_code", `{` + run + `,"limits":` + membersJSON("", 16) + `}`, ip, "limits.k0"},
			{"run_code", `{` + run + `,"limits":` + membersJSON("", 17) + `}`, ip, "limits"},
			{"run_code", `{` + run + `,"limits":{"timeout_ms":1,"timeout_ms":2}}`, ip, "limits.timeout_ms"},
			{"describe_skill", `{"name":"acme.math.add","name":"acme.math.add"}`, ip, "name"},
		} {
			checkError(t, c, tc)
		}
		_, err := c.call("list_skills", membersJSON("", 17))
		require.NotNil(t, err)
		assert.Contains(t, err.Details, "has more than 16 members", c.name())
		_, err = c.call("run_code", `{`+run+`,"limits":{"timeout_ms":1,"timeout_ms":2}}`)
		require.NotNil(t, err)
		assert.Contains(t, err.Details, "is given twice", c.name())
	}
}

// A boolean parameter takes true or false only.
func TestBoolParamsRefuseOtherValues(t *testing.T) {
	e, _ := newExecEnv(t, completed(`{}`))
	for _, c := range e.fronts() {
		for _, v := range []string{`"true"`, `1`, `{}`} {
			checkError(t, c, paramCase{"run_code", `{"language":"python","code":"x","async":` + v + `}`,
				transport.StringInvalidParams, "async"})
		}
		_, err := c.call("run_code", `{"language":"python","code":"x","stream":"yes"}`)
		require.NotNil(t, err)
		assert.Contains(t, err.Details, "must be true or false, not a string", c.name())
	}
}

// A list parameter holds at most its bound: 32 input blobs are read (and
// then not found), 33 are refused before any is looked up.
func TestListParamsBound(t *testing.T) {
	e, _ := newExecEnv(t, completed(`{}`))
	ids := func(n int) string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf(`"blob:%032x"`, i)
		}
		return "[" + strings.Join(out, ",") + "]"
	}
	for _, c := range e.fronts() {
		_, err := c.call("run_code", `{"language":"python","code":"x","input_blobs":`+ids(32)+`}`)
		require.NotNil(t, err)
		assert.Equal(t, StringBlobNotFound, err.EffectiveCode(), "%s: %s", c.name(), err.Details)
		_, err = c.call("run_code", `{"language":"python","code":"x","input_blobs":`+ids(33)+`}`)
		require.NotNil(t, err)
		assert.Equal(t, transport.StringInvalidParams, err.EffectiveCode(), c.name())
		assert.Contains(t, err.Details, "has 33 entries; at most 32 are allowed", c.name())
	}
}

// An integer parameter given as another number is refused with the
// number quoted, whole up to 32 characters and cut beyond (over HTTP; the
// framed transport aborts on it as a parse error).
func TestNonIntegerQuotedUpTo32(t *testing.T) {
	e := newEnv(t, examplesDir())
	c := e.httpFront("")
	at := "1." + strings.Repeat("0", 29) + "1" // 32 characters
	_, err := c.call("list_skills", `{"limit":`+at+`}`)
	require.NotNil(t, err)
	assert.Contains(t, err.Details, "must be an integer, not "+at)
	assert.NotContains(t, err.Details, "…")
	over := at + "2"
	_, err = c.call("list_skills", `{"limit":`+over+`}`)
	require.NotNil(t, err)
	assert.Contains(t, err.Details, "must be an integer, not "+at+"…")
}

// Integer bounds are inclusive at both ends.
func TestIntegerBoundsInclusive(t *testing.T) {
	e := newEnv(t, examplesDir())
	id := e.putBlob(t, "abcdef")
	for _, c := range e.fronts() {
		var r ReadBlobResult
		mustCall(t, c, "read_blob", `{"blob_id":"`+id+`","max_bytes":1}`, &r)
		assert.Equal(t, "a", r.Content, c.name())
		checkError(t, c, paramCase{"read_blob", `{"blob_id":"` + id + `","max_bytes":0}`, transport.StringInvalidParams, "max_bytes"})
		mustCall(t, c, "read_blob", `{"blob_id":"`+id+`","max_bytes":1099511627776}`, &r) // 1 << 40
		assert.Equal(t, "abcdef", r.Content, c.name())
		checkError(t, c, paramCase{"read_blob", `{"blob_id":"` + id + `","max_bytes":1099511627777}`, transport.StringInvalidParams, "max_bytes"})
		var page ListSkillsResult
		mustCall(t, c, "list_skills", `{"limit":1}`, &page)
		assert.Len(t, page.Skills, 1, c.name())
		checkError(t, c, paramCase{"list_skills", `{"limit":0}`, transport.StringInvalidParams, "limit"})
	}
}
