package skills

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A value quoted in a violation is kept whole up to 200 bytes; a longer
// one is cut at 200 bytes, or before the rune that byte falls in, and
// marked with "…".
func TestViolationActualClippedAt200(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	cases := map[string]struct{ path, want string }{
		"at":     {long(200), long(200)},
		"below":  {long(199), long(199)},
		"above":  {long(201), long(200) + "…"},
		"rune":   {long(199) + "é" + long(10), long(199) + "…"},
		"rune@0": {"é" + long(250), "é" + long(198) + "…"},
	}
	root := t.TempDir()
	tree := map[string]string{}
	for rel, tc := range cases {
		tree = merge(tree, schemaPackage(fileSafe(rel), "acme.c"+fileSafe(rel), `"`+tc.path+`"`, "", nil))
	}
	writeTree(t, root, tree)
	r, _ := newRegistry(t, Options{Dir: root})
	rep := lastReport(t, r)
	for rel, tc := range cases {
		p := reportFor(t, rep, fileSafe(rel))
		require.Len(t, p.Violations, 1, rel)
		assert.Equal(t, tc.want, p.Violations[0].Actual, rel)
	}
}

func fileSafe(s string) string { return strings.NewReplacer("@", "at").Replace(s) }

// A violation reads "file:field: message (expected E, got A)", without
// "file:" for the package as a whole, and logs the same members.
func TestViolationRendering(t *testing.T) {
	v := Violation{File: "skill.toml", Field: "/name", Expected: "a name", Actual: "X", Message: "bad"}
	assert.Equal(t, "skill.toml:/name: bad (expected a name, got X)", v.String())
	v.File = ""
	assert.Equal(t, "/name: bad (expected a name, got X)", v.String())

	var buf bytes.Buffer
	log := zerolog.New(&buf)
	log.Info().Array("v", Violations{{File: "SKILL.md", Field: "/f", Expected: "e", Actual: 3, Message: "m"}, v}).Send()
	assert.JSONEq(t, `{"level":"info","v":[
		{"file":"SKILL.md","field":"/f","expected":"e","actual":3,"message":"m"},
		{"field":"/name","expected":"a name","actual":"X","message":"bad"}]}`, buf.String())
}
