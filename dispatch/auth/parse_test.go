package auth

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseGoodFile(t *testing.T) {
	pol, err := Parse([]byte(expand(goodFile)), ParseOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"agent.main_1", "dash", "pos-fleet"}, pol.Names())
	assert.Equal(t, 4, pol.Tokens())
	assert.Equal(t, 4, pol.Certificates())
	assert.Empty(t, pol.Warnings())

	pos := pol.Identity("pos-fleet")
	require.NotNil(t, pos)
	assert.Equal(t, ClassDevice, pos.Class())
	assert.Equal(t, Limits{RequestsPerSecond: 20, Burst: 40, ConcurrentRuns: 2, MaxConnections: 50}, pos.Limits())
	assert.Equal(t, []string{"describe_skill", "execute_skill", "list_skills"}, pos.Methods())
	assert.Equal(t, []string{"acme", "skills"}, pos.Namespaces())

	agent := pol.Identity("agent.main_1")
	assert.Equal(t, []string{Wildcard}, agent.Methods())
	assert.Equal(t, []string{Wildcard}, agent.Namespaces())
	assert.Equal(t, Limits{RequestsPerSecond: 2.5, Burst: 3}, agent.Limits(), "burst defaults to one second's worth")

	dash := pol.Identity("dash")
	assert.Empty(t, dash.Namespaces())
	assert.Nil(t, pol.Identity("nobody"))
}

func TestParseWarnings(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"no identities", "identities: []\n", []string{"1:13: identities: no identities"}},
		{"no credentials", "identities:\n  - name: a\n    class: agent\n    methods: []\n    namespaces: []\n",
			[]string{"2:5: identities[0]: no tokens or certificates"}},
		{"burst alone", "identities:\n  - name: a\n    class: agent\n    tokens: [{{agent}}]\n    methods: []\n    namespaces: []\n    limits: {burst: 3}\n",
			[]string{"7:13: identities[0].limits: burst has no effect"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pol, err := Parse([]byte(expand(tt.body)), ParseOptions{})
			require.NoError(t, err)
			assertProblems(t, pol.Warnings(), tt.want)
		})
	}
}

// identity is the start of a valid one-identity file; cases append lines
// from line 7 on, or replace one of lines 2 to 6.
const identity = `identities:
  - name: a
    class: agent
    tokens: [{{agent}}]
    methods: ["*"]
    namespaces: ["*"]
`

func replaceLine(s string, line int, with string) string {
	lines := strings.Split(s, "\n")
	lines[line-1] = with
	return strings.Join(lines, "\n")
}

func TestParseProblems(t *testing.T) {
	second := identity + "  - name: b\n    class: agent\n    tokens: [{{dash}}]\n    methods: [\"*\"]\n    namespaces: [\"*\"]\n"
	tests := []struct {
		name, body string
		want       []string // one fragment per problem, in order
	}{
		{"unknown top-level key", "identities: []\nfoo: 1\n", []string{`2:1: unknown key "foo"; known keys: version, identities`}},
		{"missing identities", "version: 1\n", []string{`1:1: missing required key "identities"`}},
		{"bad version", "version: 2\nidentities: []\n", []string{"1:10: version: must be 1"}},
		{"identities not a list", "identities: {}\n", []string{"1:13: identities: must be a list"}},
		{"root not a mapping", "- a\n- b\n", []string{"1:1: must be a mapping of keys to values, not a list"}},
		{"identity not a mapping", "identities:\n  - just-a-string\n", []string{"2:5: identities[0]: must be a mapping"}},
		{"duplicate key", "identities: []\nidentities: []\n", []string{`2:1: key "identities" given twice`}},
		{"unknown identity key", identity + "    colour: red\n", []string{`7:5: identities[0]: unknown key "colour"`}},
		{"bad name", replaceLine(identity, 2, "  - name: Pos Fleet"), []string{`2:11: identities[0].name: "Pos Fleet" is not a valid name`}},
		{"long name", replaceLine(identity, 2, "  - name: "+strings.Repeat("a", 65)), []string{"2:11: identities[0].name: "}},
		{"reserved name", replaceLine(identity, 2, "  - name: anonymous"), []string{`2:11: identities[0].name: the name "anonymous" is reserved`}},
		{"null name", replaceLine(identity, 2, "  - name:"), []string{"identities[0].name: must be a string, not empty"}},
		{"missing keys", "identities:\n  - tokens: [{{agent}}]\n", []string{
			`2:5: identities[0]: missing required key "name"`, `2:5: identities[0]: missing required key "class"`,
			`2:5: identities[0]: missing required key "methods"`, `2:5: identities[0]: missing required key "namespaces"`}},
		{"bad class", replaceLine(identity, 3, "    class: robot"), []string{`3:12: identities[0].class: "robot" is not a class; use one of agent`}},
		{"anonymous class", replaceLine(identity, 3, "    class: anonymous"), []string{`3:12: identities[0].class: "anonymous" is not a class`}},
		{"tokens not a list", replaceLine(identity, 4, "    tokens: {{agent}}"), []string{"4:13: identities[0].tokens: must be a list"}},
		{"token not a hash", replaceLine(identity, 4, "    tokens: [abc]"), []string{"4:14: identities[0].tokens[0]: not a token hash"}},
		{"short hash", replaceLine(identity, 4, "    tokens: [sha256:abcd]"), []string{"4:14: identities[0].tokens[0]: not a token hash"}},
		{"non-hex hash", replaceLine(identity, 4, "    tokens: [sha256:"+strings.Repeat("g", 64)+"]"), []string{"4:14: identities[0].tokens[0]: not a token hash"}},
		{"plaintext token", replaceLine(identity, 4, "    tokens: [sgt_secretvalue]"), []string{"4:14: identities[0].tokens[0]: this looks like a plaintext token"}},
		{"token twice", replaceLine(identity, 4, "    tokens: [{{agent}}, {{agent}}]"), []string{"4:87: identities[0].tokens[1]: this token hash is already listed at line 4"}},
		{"token of two identities", replaceLine(second, 9, "    tokens: [{{agent}}]"), []string{`9:14: identities[1].tokens[0]: this token hash is already listed at line 4 (identity "a")`}},
		{"duplicate name", replaceLine(second, 7, "  - name: a"), []string{`7:11: identities[1].name: name "a" already used at line 2`}},
		{"matcher with two keys", identity + "    certificates:\n      - common_name: x\n        dns_name: x.example.com\n",
			[]string{"9:19: identities[0].certificates[0].dns_name: a matcher compares one attribute; write common_name and dns_name as two list entries"}},
		{"empty matcher", identity + "    certificates:\n      - {}\n", []string{"8:9: identities[0].certificates[0]: empty matcher"}},
		{"unknown matcher", identity + "    certificates:\n      - email: a@example.com\n", []string{`8:9: identities[0].certificates[0]: unknown key "email"; known keys: common_name, dns_name, uri`}},
		{"wildcard dns", identity + "    certificates:\n      - dns_name: \"*.example.com\"\n", []string{"8:19: identities[0].certificates[0].dns_name: wildcards are not supported"}},
		{"bad dns", identity + "    certificates:\n      - dns_name: exa mple\n", []string{`8:19: identities[0].certificates[0].dns_name: "exa mple" is not a DNS name`}},
		{"bad uri", identity + "    certificates:\n      - uri: not a uri\n", []string{`8:14: identities[0].certificates[0].uri: "not a uri" is not an absolute URI`}},
		{"empty common name", identity + "    certificates:\n      - common_name: \"\"\n", []string{"8:22: identities[0].certificates[0].common_name: common_name must be 1 to 64 printable characters"}},
		{"matcher of two identities", identity + "    certificates:\n      - dns_name: pos.example.com\n" +
			"  - name: b\n    class: agent\n    methods: []\n    namespaces: []\n    certificates:\n      - dns_name: POS.Example.com.\n",
			[]string{`14:9: identities[1].certificates[0]: dns_name "pos.example.com" is already listed at line 8 (identity "a")`}},
		{"unknown method", replaceLine(identity, 5, "    methods: [execute]"), []string{`5:15: identities[0].methods[0]: "execute" is not a method of this gateway`}},
		{"alias method", replaceLine(identity, 5, "    methods: [ListSkills]"), []string{`5:15: identities[0].methods[0]: use the canonical method name "list_skills", not "ListSkills"`}},
		{"initialize method", replaceLine(identity, 5, "    methods: [Initialize]"), []string{`5:15: identities[0].methods[0]: "Initialize" is not a method`}},
		{"wildcard and more", replaceLine(identity, 5, `    methods: ["*", list_skills]`), []string{`5:15: identities[0].methods[0]: "*" must be the only entry`}},
		{"method twice", replaceLine(identity, 5, "    methods: [list_skills, list_skills]"), []string{`5:28: identities[0].methods[1]: "list_skills" is listed twice`}},
		{"methods not a list", replaceLine(identity, 5, `    methods: "*"`), []string{"5:14: identities[0].methods: must be a list (for example"}},
		{"method not a string", replaceLine(identity, 5, `    methods: [[list_skills]]`), []string{"5:15: identities[0].methods[0]: must be a string, not a list"}},
		{"bad namespace", replaceLine(identity, 6, "    namespaces: [acme.math]"), []string{`6:18: identities[0].namespaces[0]: "acme.math" is not a namespace`}},
		{"bad limits", identity + "    limits:\n      requests_per_second: -1\n      burst: 1.5\n      concurrent_runs: \"2\"\n      max_connections: .nan\n      per_minute: 3\n", []string{
			"8:28: identities[0].limits.requests_per_second: must be a number from 0 (unlimited) to 1000000",
			"9:14: identities[0].limits.burst: must be a whole number",
			"10:24: identities[0].limits.concurrent_runs: must be a whole number",
			"11:24: identities[0].limits.max_connections: must be a whole number",
			`12:7: identities[0].limits: unknown key "per_minute"`}},
		{"rate not a number", identity + "    limits: {requests_per_second: .nan}\n", []string{"7:35: identities[0].limits.requests_per_second: must be a number"}},
		{"rate too high", identity + "    limits: {requests_per_second: 2000000}\n", []string{"7:35: identities[0].limits.requests_per_second: must be a number"}},
		{"limits not a mapping", identity + "    limits: 20\n", []string{"7:13: identities[0].limits: must be a mapping"}},
		{"anchors", replaceLine(replaceLine(identity, 5, `    methods: &m ["*"]`), 6, "    namespaces: *m"), []string{
			"5:14: YAML anchors and aliases are not supported", "6:17: YAML anchors and aliases are not supported"}},
		{"syntax error", "identities:\n  - name: a\n   bad: [\n", []string{"YAML syntax: "}},
		{"tab indentation", "identities:\n\t- name: a\n", []string{"2:1: YAML syntax: found character that cannot start any token"}},
		{"two documents", "identities: []\n---\nidentities: []\n", []string{"more than one YAML document"}},
		{"empty file", "", []string{"the file is empty"}},
		{"comments only", "# nothing yet\n", []string{"the file is empty"}},
		{"too large", strings.Repeat("#", MaxFileSize+1), []string{"file is larger than"}},
		{"bad network pattern", identity + "    network: [\"api.example.com\"]\n", []string{
			`7:15: identities[0].network[0]: "api.example.com" is not a network pattern`}},
		{"bad run_code_network", identity + "    run_code_network: [\"*.:443\", 7]\n", []string{
			`7:24: identities[0].run_code_network[0]: "*.:443" is not a network pattern`, `7:34: identities[0].run_code_network[1]: "7" is not a network pattern`}},
		{"network not a list", identity + "    network: \"*\"\n", []string{"7:14: identities[0].network: must be a list"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pol, err := Parse([]byte(expand(tt.body)), ParseOptions{})
			require.Error(t, err)
			assert.Nil(t, pol)
			assert.ErrorIs(t, err, ErrInvalidFile)
			var fe *FileError
			require.True(t, errors.As(err, &fe))
			assertProblems(t, fe.Problems, tt.want)
		})
	}
}

func assertProblems(t *testing.T, got []Problem, want []string) {
	t.Helper()
	texts := make([]string, len(got))
	for i, p := range got {
		texts[i] = p.String()
	}
	require.Len(t, texts, len(want), "problems: %q", texts)
	for i := range want {
		assert.Contains(t, texts[i], want[i])
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	body := `identities:
  - name: BAD
    class: robot
    tokens: [nope]
    methods: [nope]
    namespaces: [no.pe]
    extra: 1
`
	_, err := Parse([]byte(body), ParseOptions{})
	var fe *FileError
	require.True(t, errors.As(err, &fe))
	assert.Len(t, fe.Problems, 6)
	fe.File = "/etc/skillgate/auth.yaml"
	msg := fe.Error()
	assert.True(t, strings.HasPrefix(msg, "/etc/skillgate/auth.yaml: 6 problem(s):\n  /etc/skillgate/auth.yaml:2:11: identities[0].name:"), msg)
}

func TestParsePlaintextTokenNotEchoed(t *testing.T) {
	_, err := Parse([]byte(replaceLine(identity, 4, "    tokens: [sgt_secretvalue]")), ParseOptions{})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "secretvalue")
}

func TestParseCustomMethods(t *testing.T) {
	body := replaceLine(expand(identity), 5, "    methods: [list_skills, admin_reload]")
	_, err := Parse([]byte(body), ParseOptions{})
	require.Error(t, err)
	pol, err := Parse([]byte(body), ParseOptions{Methods: append(DefaultMethods(), "admin_reload")})
	require.NoError(t, err)
	assert.True(t, pol.Identity("a").AllowsMethod("admin_reload"))
}

func TestParseNetwork(t *testing.T) {
	pol, err := Parse([]byte(expand(identity+"    network: [\"api.acme.example:443\"]\n    run_code_network: [\"*\"]\n"+
		"  - name: b\n    class: agent\n    tokens: [{{dash}}]\n    methods: [\"*\"]\n    namespaces: [\"*\"]\n")), ParseOptions{})
	require.NoError(t, err)
	a, b := pol.Identity("a"), pol.Identity("b")
	require.NotNil(t, a)
	require.NotNil(t, b)
	net, narrowed := a.Network()
	assert.True(t, narrowed)
	assert.Equal(t, []string{"api.acme.example:443"}, net)
	assert.Equal(t, []string{"*"}, a.RunCodeNetwork())
	_, narrowed = b.Network()
	assert.False(t, narrowed, "no network key: skills keep their own")
	assert.Empty(t, b.RunCodeNetwork(), "no run_code_network: run_code has no network")
}
