package dispatch

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch/auth"
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
	assert.Equal(t, transport.StringAuthRequired, err.EffectiveCode())
}

// With args_schema, args are checked before any sandbox starts, on every
// front door, and each violation is named by its JSON pointer.
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
	for _, c := range callers {
		_, err := c.call("execute_skill", `{"name":"acme.typed","args":{"a":"two","b":-1,"c":3}}`)
		require.NotNil(t, err, c.name())
		assert.EqualValues(t, transport.CodeInvalidParams, err.Code)
		assert.Equal(t, transport.StringInvalidParams, err.EffectiveCode())
		for _, ptr := range []string{"/a", "/b", "c"} {
			assert.Contains(t, err.Details, ptr, c.name())
		}
		var vs []map[string]string
		require.NoError(t, json.Unmarshal(err.Extra["violations"], &vs), c.name())
		assert.GreaterOrEqual(t, len(vs), 3, c.name())

		_, err = c.call("execute_skill", `{"name":"acme.typed"}`)
		require.NotNil(t, err, "absent args are {} and miss a and b")
		assert.Contains(t, err.Details, "missing properties")
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
