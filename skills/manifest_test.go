package skills

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fields(vs []Violation) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.File + ":" + v.Field
	}
	return out
}

func TestParseManifestValid(t *testing.T) {
	m, vs := ParseManifest([]byte(`
name = "acme.math.add"
version = "1.0.0-rc.1+build.7"
description = "Add two numbers."
kind = "action"
[runtime]
language = "python"
entrypoint = "code/main.py"
export = "main"
timeout_ms = 30000
[permissions]
secrets = ["ACME_API_KEY", "_X1"]
`))
	require.Empty(t, vs)
	assert.Equal(t, Manifest{
		Name: "acme.math.add", Version: "1.0.0-rc.1+build.7", Description: "Add two numbers.", Kind: KindAction,
		Runtime:     &Runtime{Language: "python", Entrypoint: "code/main.py", Export: "main", TimeoutMS: 30000},
		Permissions: Permissions{Secrets: []string{"ACME_API_KEY", "_X1"}},
	}, m)
	wire, err := json.Marshal(m)
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"acme.math.add","version":"1.0.0-rc.1+build.7","description":"Add two numbers.","kind":"action",
		"runtime":{"language":"python","entrypoint":"code/main.py","export":"main","timeout_ms":30000},
		"permissions":{"secrets":["ACME_API_KEY","_X1"]}}`, string(wire))

	m, vs = ParseManifest([]byte("name = \"acme.style.guide\"\nversion = \"2.0.0\"\ndescription = \"Style.\"\nkind = \"instruction\"\n"))
	require.Empty(t, vs)
	assert.Nil(t, m.Runtime)
	wire, err = json.Marshal(m)
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"acme.style.guide","version":"2.0.0","description":"Style.","kind":"instruction","permissions":{"secrets":[]}}`, string(wire))
}

// Every broken field is reported, at once, with its JSON pointer.
func TestParseManifestViolations(t *testing.T) {
	tests := []struct {
		name string
		toml string
		want []string
	}{
		{"syntax error", "name = ", []string{"skill.toml:"}},
		{"empty document", "", []string{"skill.toml:/name", "skill.toml:/version", "skill.toml:/description", "skill.toml:/kind"}},
		{"everything wrong at once", `
name = "Acme.Math"
version = "1.0"
description = "two\nlines"
kind = "tool"
color = "red"
[runtime]
language = "ruby"
entrypoint = "../main.py"
export = "1main"
timeout_ms = -5
shell = true
[permissions]
secrets = ["lower_case", 7, "OK", "OK"]
network = ["example.com"]
`, []string{
			"skill.toml:/color", "skill.toml:/name", "skill.toml:/version", "skill.toml:/description", "skill.toml:/kind",
			"skill.toml:/runtime/shell", "skill.toml:/runtime/language", "skill.toml:/runtime/entrypoint",
			"skill.toml:/runtime/export", "skill.toml:/runtime/timeout_ms",
			"skill.toml:/permissions/secrets/0", "skill.toml:/permissions/secrets/1",
			"skill.toml:/permissions/secrets/3", "skill.toml:/permissions/network/0",
		}},
		{"wrong types", `
name = 5
version = 1.0
description = ["x"]
kind = true
runtime = "python"
permissions = 3
`, []string{"skill.toml:/name", "skill.toml:/version", "skill.toml:/description", "skill.toml:/kind", "skill.toml:/runtime", "skill.toml:/permissions"}},
		{"action without runtime", `
name = "acme.x"
version = "1.0.0"
description = "x"
kind = "action"
`, []string{"skill.toml:/runtime"}},
		{"instruction with runtime", `
name = "acme.x"
version = "1.0.0"
description = "x"
kind = "instruction"
[runtime]
language = "python"
`, []string{"skill.toml:/runtime"}},
		{"runtime fields missing", `
name = "acme.x"
version = "1.0.0"
description = "x"
kind = "action"
[runtime]
`, []string{"skill.toml:/runtime/language", "skill.toml:/runtime/entrypoint", "skill.toml:/runtime/export"}},
		{"entrypoint shapes", `
name = "acme.x"
version = "1.0.0"
description = "   "
kind = "action"
[runtime]
language = "python"
entrypoint = "code/my-main.py"
export = "class"
timeout_ms = 1.5
`, []string{"skill.toml:/description", "skill.toml:/runtime/entrypoint", "skill.toml:/runtime/export", "skill.toml:/runtime/timeout_ms"}},
		{"reserved namespace", `
name = "skills.protocol.guide"
version = "9.0.0"
description = "shadow"
kind = "instruction"
`, []string{"skill.toml:/name"}},
		{"secrets not a list", `
name = "acme.x"
version = "1.0.0"
description = "x"
kind = "instruction"
[permissions]
secrets = "KEY"
`, []string{"skill.toml:/permissions/secrets"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, vs := ParseManifest([]byte(tc.toml))
			assert.Equal(t, tc.want, fields(vs), "%v", vs)
			for _, v := range vs {
				assert.NotEmpty(t, v.Expected)
				assert.NotEmpty(t, v.Message)
			}
		})
	}
}

func TestViolationShape(t *testing.T) {
	_, vs := ParseManifest([]byte("name = \"acme.x\"\nversion = \"1.0.0\"\ndescription = \"x\"\nkind = \"action\"\n[runtime]\nlanguage = \"python\"\nexport = \"main\"\n"))
	require.Len(t, vs, 1)
	wire, err := json.Marshal(vs[0])
	require.NoError(t, err)
	assert.JSONEq(t, `{"file":"skill.toml","field":"/runtime/entrypoint","expected":"relative path of a .py file inside the package, like code/main.py","actual":null,"message":"required field is missing"}`, string(wire))
	assert.Contains(t, vs[0].String(), "skill.toml:/runtime/entrypoint: required field is missing")
}

func TestSkillNames(t *testing.T) {
	for _, n := range []string{"acme.math.add", "a.b", "a1.b2.c3", "salesforce.leads.sync"} {
		assert.NoError(t, ValidateSkillName(n), n)
	}
	long := "a." + string(make([]byte, 127))
	for _, n := range []string{"", "acme", "Acme.x", "acme..x", ".acme.x", "acme.x.", "acme.1x", "acme.x-y", "acme.x_y",
		"acme.import.x", "acme.class", long, "acme.ß"} {
		assert.Error(t, ValidateSkillName(n), n)
	}
	for _, n := range []string{"pdf-tips", "a", "x1-y2"} {
		assert.NoError(t, validateAgentSkillName(n), n)
	}
	for _, n := range []string{"", "-a", "a-", "a--b", "A", "a_b", "a.b", string(make([]byte, 65))} {
		assert.Error(t, validateAgentSkillName(n), n)
	}
	assert.True(t, inNamespace("acme.x.y", "acme"))
	assert.True(t, inNamespace("acme", "acme"))
	assert.True(t, inNamespace("acme.math.add", "acme.math"))
	assert.False(t, inNamespace("acmecorp.x", "acme"))
	assert.False(t, inNamespace("acme.mathx.y", "acme.math"))
}

func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(actionTOML("acme.math.add", "1.0.0")))
	f.Add([]byte("name = 5\n[runtime]\ntimeout_ms = 1e9\n[permissions]\nsecrets = [[1]]\n"))
	f.Add([]byte("[[runtime]]\nx = 1\n"))
	f.Add([]byte("runtime.language = \"python\"\nkind = \"action\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, vs := ParseManifest(data)
		if len(vs) == 0 {
			if err := ValidateSkillName(m.Name); err != nil {
				t.Fatalf("accepted name %q: %v", m.Name, err)
			}
			if _, err := ParseVersion(m.Version); err != nil {
				t.Fatalf("accepted version %q", m.Version)
			}
			if (m.Kind == KindAction) != (m.Runtime != nil) {
				t.Fatalf("kind %q with runtime %v", m.Kind, m.Runtime)
			}
		}
		if _, err := json.Marshal(vs); err != nil {
			t.Fatalf("violations do not encode: %v", err)
		}
	})
}

func TestManifestNetwork(t *testing.T) {
	base := "name = \"acme.crm.lookup\"\nversion = \"1.0.0\"\ndescription = \"Looks up.\"\nkind = \"action\"\n" +
		"[runtime]\nlanguage = \"python\"\nentrypoint = \"main.py\"\nexport = \"main\"\n[permissions]\n"
	m, v := ParseManifest([]byte(base + `network = ["api.acme.example:443", "*.files.acme.example:443", "api.acme.example:443"]`))
	assert.Empty(t, v)
	assert.Equal(t, []string{"api.acme.example:443", "*.files.acme.example:443"}, m.Permissions.Network)
	_, v = ParseManifest([]byte(base + `network = ["api.acme.example", 7, "*", "*.x:0", "ok.example:80"]`))
	var paths []string
	for _, e := range v {
		paths = append(paths, e.Field)
	}
	assert.Equal(t, []string{"/permissions/network/0", "/permissions/network/1", "/permissions/network/2", "/permissions/network/3"}, paths)
	_, v = ParseManifest([]byte(base + `network = "api.acme.example:443"`))
	require.Len(t, v, 1)
	assert.Equal(t, "/permissions/network", v[0].Field)
}

// TestManifestCPUs: [runtime] cpus is a CPU share a cgroup quota can
// express, an integer or a decimal; anything else is a violation.
func TestManifestCPUs(t *testing.T) {
	const head = "name = \"acme.x\"\nversion = \"1.0.0\"\ndescription = \"x\"\nkind = \"action\"\n" +
		"[runtime]\nlanguage = \"python\"\nentrypoint = \"code/main.py\"\nexport = \"main\"\n"
	for text, want := range map[string]float64{"": 0, "cpus = 0.5\n": 0.5, "cpus = 2\n": 2, "cpus = 0.01\n": 0.01, "cpus = 1024\n": 1024} {
		m, vs := ParseManifest([]byte(head + text))
		require.Empty(t, vs, text)
		assert.Equal(t, want, m.Runtime.CPUs, text)
	}
	for _, text := range []string{"cpus = 0\n", "cpus = -1\n", "cpus = 0.001\n", "cpus = 2000\n", "cpus = \"2\"\n", "cpus = nan\n", "cpus = inf\n", "cpus = true\n"} {
		m, vs := ParseManifest([]byte(head + text))
		require.Len(t, vs, 1, text)
		assert.Equal(t, "/runtime/cpus", vs[0].Field, text)
		assert.Zero(t, m.Runtime.CPUs, text)
	}
}
