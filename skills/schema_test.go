package skills

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func schemaTOML(name, args, output string) string {
	s := actionTOML(name, "1.0.0") + "args_schema = " + args + "\n"
	if output != "" {
		s += "output_schema = " + output + "\n"
	}
	return s
}

func schemaPackage(dir, name, args, output string, files map[string]string) map[string]string {
	m := map[string]string{dir + "/skill.toml": schemaTOML(name, args, output), dir + "/SKILL.md": packageMD(name), dir + "/code/main.py": ""}
	for k, v := range files {
		m[dir+"/"+k] = v
	}
	return m
}

// args_schema and output_schema are compiled when the package loads: a
// missing, invalid or non-object schema skips the package with a
// violation of the manifest field, and a $ref may not leave the document.
func TestSchemasCheckedAtLoad(t *testing.T) {
	root := t.TempDir()
	const good = `{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]}`
	writeTree(t, root, merge(
		schemaPackage("typed", "acme.typed", `"schema/args.json"`, `"schema/out.json"`,
			map[string]string{"schema/args.json": good, "schema/out.json": `{"type":"object"}`}),
		schemaPackage("missing", "acme.missing", `"schema/args.json"`, "", nil),
		schemaPackage("notjson", "acme.notjson", `"schema/args.json"`, "", map[string]string{"schema/args.json": `{"type":`}),
		schemaPackage("invalid", "acme.invalid", `"schema/args.json"`, "", map[string]string{"schema/args.json": `{"type":"object","minimum":"one"}`}),
		schemaPackage("array", "acme.array", `"schema/args.json"`, "", map[string]string{"schema/args.json": `{"type":"array"}`}),
		schemaPackage("external", "acme.external", `"schema/args.json"`, "",
			map[string]string{"schema/args.json": `{"type":"object","properties":{"x":{"$ref":"file:///etc/passwd"}}}`}),
		schemaPackage("badpath", "acme.badpath", `"../args.json"`, "", nil),
		schemaPackage("notstring", "acme.notstring", `3`, "", nil),
		schemaPackage("badout", "acme.badout", `"a.json"`, `"o.json"`, map[string]string{"a.json": good, "o.json": `{"type":12}`}),
	))
	r, _ := newRegistry(t, Options{Dir: root})
	rep := lastReport(t, r)
	want := map[string]string{
		"missing": "/runtime/args_schema", "notjson": "/runtime/args_schema", "invalid": "/runtime/args_schema",
		"array": "/runtime/args_schema", "external": "/runtime/args_schema", "badpath": "/runtime/args_schema",
		"notstring": "/runtime/args_schema", "badout": "/runtime/output_schema",
	}
	for rel, field := range want {
		p := reportFor(t, rep, rel)
		assert.Equal(t, StatusSkipped, p.Status, rel)
		assert.Equal(t, []string{"skill.toml:" + field}, fields(p.Violations), "%s: %v", rel, p.Violations)
	}
	require.Equal(t, StatusLoaded, reportFor(t, rep, "typed").Status)

	s, err := r.Catalog().Resolve("acme.typed", "")
	require.NoError(t, err)
	assert.JSONEq(t, good, string(s.ArgsSchema()))
	assert.JSONEq(t, `{"type":"object"}`, string(s.OutputSchema()))
	assert.Equal(t, "schema/args.json", s.Manifest.Runtime.ArgsSchema)

	vs, err := s.ValidateArgs(json.RawMessage(`{"n":3}`))
	require.NoError(t, err)
	assert.Empty(t, vs)
	vs, err = s.ValidateArgs(json.RawMessage(`{"n":0}`))
	require.NoError(t, err)
	require.Len(t, vs, 1)
	assert.Equal(t, "/n", vs[0].Field)
	assert.Equal(t, "a number >= 1", vs[0].Expected)
	assert.Equal(t, json.Number("0"), vs[0].Actual)
	assert.NotEmpty(t, vs[0].Message)
	vs, err = s.ValidateArgs(nil)
	require.NoError(t, err)
	require.Len(t, vs, 1, "absent args are {} and miss n")
	assert.Equal(t, "/n", vs[0].Field, "a missing property is named by its own pointer")
	assert.Nil(t, vs[0].Actual)
	assert.True(t, strings.Contains(vs[0].Message, "n"), vs[0].Message)

	plain, err := r.Catalog().Resolve("acme.typed", "1.0.0")
	require.NoError(t, err)
	assert.NotNil(t, plain.ArgsSchema())
}

func TestNoSchemaValidatesNothing(t *testing.T) {
	r, _ := newRegistry(t, Options{Dir: "../examples/skills"})
	s, err := r.Catalog().Resolve("acme.math.add", "")
	require.NoError(t, err)
	assert.Nil(t, s.ArgsSchema())
	assert.Nil(t, s.OutputSchema())
	vs, err := s.ValidateArgs(json.RawMessage(`{"anything":[1,2]}`))
	require.NoError(t, err)
	assert.Empty(t, vs)
}
