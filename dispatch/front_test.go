package dispatch

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/internal/runerror"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/transport"
)

// frontCaller calls through the exported entry of other front doors.
type frontCaller struct {
	t  *testing.T
	f  *Front
	id *auth.Identity
}

func (c frontCaller) call(method, params string) (json.RawMessage, *transport.Error) {
	return c.f.Invoke(c.t.Context(), c.id, "test", method, json.RawMessage(params))
}

func (c frontCaller) name() string { return c.f.Name() }

func (e *env) front(t *testing.T) frontCaller {
	f := e.d.Front(metrics.FrontMCP)
	id, err := f.Authenticate("", nil)
	require.NoError(t, err)
	return frontCaller{t, f, id}
}

// A front door of its own invokes the shared method table with the same
// errors, and its calls are counted under its own label.
func TestFrontInvoke(t *testing.T) {
	e := newEnv(t, examplesDir())
	c := e.front(t)
	res, err := c.call("list_skills", `{}`)
	require.Nil(t, err)
	assert.Contains(t, string(res), "acme.math.add")
	checkError(t, c, paramCase{"describe_skill", `{}`, transport.StringInvalidParams, "name"})
	_, err = c.call("Initialize", `{"protocol_version":"1.0"}`)
	require.NotNil(t, err, "Initialize belongs to the framed transport")
	assert.EqualValues(t, transport.CodeMethodNotFound, err.Code)
	_, err = c.call("list_skills", `null`)
	assert.Nil(t, err, "absent params are an empty object")
	assert.Equal(t, 2.0, testutil.ToFloat64(e.metrics.Requests.WithLabelValues(metrics.FrontMCP, "list_skills", metrics.OutcomeOK)))
	_, err = frontCaller{t, e.d.Front(metrics.FrontMCP), nil}.call("list_skills", `{}`)
	require.NotNil(t, err)
	assert.Equal(t, StringAuthRequired, err.EffectiveCode())
}

// With args_schema, args are checked before any sandbox starts, on every
// front door. Args that fail it are an execution-level error, as the
// Skills Protocol lists a validation error in skill arguments: a failed
// run with a run_id (get_run knows it) and VALIDATION_ERROR, whose
// details list every violation in the error classes' shape (field,
// expected, actual, message).
func TestArgsSchemaValidatedBeforeRun(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(examplesDir())))
	writeSkill(t, dir, "acme.typed", "1.0.0", map[string]string{
		"skill.toml": "name = \"acme.typed\"\nversion = \"1.0.0\"\ndescription = \"Typed.\"\nkind = \"action\"\n" +
			"[runtime]\nlanguage = \"python\"\nentrypoint = \"code/main.py\"\nexport = \"main\"\nargs_schema = \"schema/args.json\"\n",
		"schema/args.json": `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number","minimum":0}},` +
			`"required":["a","b"],"additionalProperties":false}`,
	})
	e, r := newExecEnvIn(t, dir, completed(`{"ok":true}`))
	callers := append(e.fronts(), e.front(t))
	decode := func(res json.RawMessage) wireFailedRun {
		var out wireFailedRun
		require.NoError(t, json.Unmarshal(res, &out))
		return out
	}
	for _, c := range callers {
		for _, mode := range []string{"", `,"async":true`} {
			res, err := c.call("execute_skill", `{"name":"acme.typed","args":{"a":"two","b":-1,"c":3}`+mode+`}`)
			require.Nil(t, err, "%s: %v", c.name(), err)
			run := decode(res)
			assert.Equal(t, "failed", run.Status, c.name())
			assert.NotEmpty(t, run.RunID, c.name())
			assert.Equal(t, runerror.Validation, run.Error.Type, c.name())
			assert.Equal(t, []wireViolation{
				{Field: "/a", Expected: "number", Actual: "two", Message: "got string, want number"},
				{Field: "/b", Expected: "a number >= 0", Actual: -1.0, Message: "minimum: got -1, want 0"},
				{Field: "/c", Expected: "no such property (the schema allows no others)", Actual: 3.0, Message: `property "c" is not allowed`},
			}, sortedViolations(run.Error.Details.Violations), c.name())
			for _, ptr := range []string{"/a", "/b", "/c"} {
				assert.Contains(t, run.Summary, ptr, c.name())
			}
			got, err := c.call("get_run", `{"run_id":"`+run.RunID+`"}`)
			require.Nil(t, err, c.name())
			assert.Equal(t, runerror.Validation, decode(got).Error.Type, "%s: the failed run is recorded", c.name())
		}

		res, err := c.call("execute_skill", `{"name":"acme.typed"}`)
		require.Nil(t, err, "absent args are {} and miss a and b")
		vs := sortedViolations(decode(res).Error.Details.Violations)
		require.Len(t, vs, 2)
		assert.Equal(t, wireViolation{Field: "/a", Expected: "a value (the property is required)", Message: `required property "a" is missing`}, vs[0])
		assert.Equal(t, "/b", vs[1].Field)
	}
	r.mu.Lock()
	assert.Empty(t, r.jobs, "no run started for invalid args")
	r.mu.Unlock()
	for _, c := range callers {
		_, err := c.call("execute_skill", `{"name":"acme.typed","args":{"a":1.5,"b":2}}`)
		require.Nil(t, err, c.name())
	}
	assert.Len(t, r.jobs, len(callers))
	_, err := callers[0].call("describe_skill", `{"name":"acme.typed","detail":"manifest"}`)
	require.Nil(t, err)
}

// wireViolation is a VALIDATION_ERROR violation as a client reads it.
type wireViolation struct {
	Field    string `json:"field"`
	Expected string `json:"expected"`
	Actual   any    `json:"actual"`
	Message  string `json:"message"`
}

// wireFailedRun is a failed run object as a client reads it.
type wireFailedRun struct {
	Status  string `json:"status"`
	RunID   string `json:"run_id"`
	Summary string `json:"summary"`
	Error   struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Details struct {
			Violations []wireViolation `json:"violations"`
		} `json:"details"`
	} `json:"error"`
}

func sortedViolations(vs []wireViolation) []wireViolation {
	out := slices.Clone(vs)
	slices.SortFunc(out, func(a, b wireViolation) int { return strings.Compare(a.Field, b.Field) })
	return out
}
