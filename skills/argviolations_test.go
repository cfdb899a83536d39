package skills

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every violation of args comes in the error classes' VALIDATION_ERROR
// shape: the pointer of the value (a missing or extra property named by
// its own), what the schema wants, the value found, and a message; a
// large object is described rather than quoted.
func TestArgViolationsShape(t *testing.T) {
	cs, err := compileSchema("args.json", []byte(`{"type":"object","required":["mode"],"additionalProperties":false,
		"properties":{"mode":{"enum":["fast","slow"]},"items":{"type":"array","items":{"type":"integer"}},
		"name":{"type":"string","maxLength":3},"opts":{"type":"object","properties":{"a/b":{"type":"boolean"}}},
		"blob":{"type":"string"}}}`), true)
	require.NoError(t, err)
	big := `{"k":"` + strings.Repeat("x", 300) + `"}`
	vs, err := cs.validate(json.RawMessage(`{"items":[1,"two"],"name":"long","opts":{"a/b":1},"extra":true,"blob":` + big + `}`))
	require.NoError(t, err)
	byField := map[string]Violation{}
	for _, v := range vs {
		byField[v.Field] = v
		assert.NotEmpty(t, v.Message, v.Field)
		assert.Empty(t, v.File)
	}
	assert.Equal(t, Violation{Field: "/mode", Expected: "a value (the property is required)", Message: `required property "mode" is missing`}, byField["/mode"])
	assert.Equal(t, "integer", byField["/items/1"].Expected)
	assert.Equal(t, "two", byField["/items/1"].Actual)
	assert.Equal(t, "a string of at most 3 characters", byField["/name"].Expected)
	assert.Equal(t, "long", byField["/name"].Actual)
	assert.Equal(t, "boolean", byField["/opts/a~1b"].Expected, "pointers escape / as ~1")
	assert.Equal(t, true, byField["/extra"].Actual)
	assert.Equal(t, "an object of 1 properties", byField["/blob"].Actual, "a large value is described")

	vs, err = cs.validate(json.RawMessage(`{"mode":"medium"}`))
	require.NoError(t, err)
	require.Len(t, vs, 1)
	assert.Equal(t, `one of: "fast", "slow"`, vs[0].Expected)
	assert.Equal(t, "medium", vs[0].Actual)
}
