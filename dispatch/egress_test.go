package dispatch

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/egress"
	"github.com/skillgate/skillgate/egress/hostpattern"
)

func TestRunEgressPerIdentity(t *testing.T) {
	pol, err := auth.Parse([]byte(`identities:
  - name: plain
    class: agent
    tokens: ["sha256:`+hex64('a')+`"]
    methods: ["*"]
    namespaces: ["*"]
  - name: coder
    class: agent
    tokens: ["sha256:`+hex64('b')+`"]
    methods: ["*"]
    namespaces: ["*"]
    run_code_network: ["pypi.org:443"]
  - name: narrow
    class: agent
    tokens: ["sha256:`+hex64('c')+`"]
    methods: ["*"]
    namespaces: ["*"]
    network: []
`), auth.ParseOptions{})
	require.NoError(t, err)
	proxy, err := egress.New(egress.Config{})
	require.NoError(t, err)
	all, _ := hostpattern.ParseList([]string{"*"})
	open, _ := hostpattern.ParseList([]string{"files.example:443"})
	d := &Dispatcher{opts: Options{Egress: &Egress{Proxy: proxy, Allow: all, OpenRunCode: open}}}
	skill := &runRequest{kind: MethodExecuteSkill, label: "acme.crm.lookup 1.0.0", network: []string{"api.acme.example:443"}}
	noNet := &runRequest{kind: MethodExecuteSkill, label: "acme.math.add 1.0.0"}
	code := &runRequest{kind: MethodRunCode, label: "run_code"}
	anon := auth.Anonymous(auth.Limits{})
	for _, tc := range []struct {
		name    string
		id      *auth.Identity
		req     *runRequest
		network bool
	}{
		{"skill with network", anon, skill, true},
		{"skill without network", anon, noNet, false},
		{"skill, identity without a network key", pol.Identity("plain"), skill, true},
		{"skill, identity narrowing to nothing", pol.Identity("narrow"), skill, false},
		{"run_code, open gateway with --run-code-network", anon, code, true},
		{"run_code, identity without run_code_network", pol.Identity("plain"), code, false},
		{"run_code, identity with run_code_network", pol.Identity("coder"), code, true},
	} {
		got := d.runEgress(&Call{Identity: tc.id}, tc.req, "run_1")
		assert.Equal(t, tc.network, got != nil, tc.name)
	}
	d.opts.Egress.OpenRunCode = nil
	assert.Nil(t, d.runEgress(&Call{Identity: anon}, code, "run_1"), "open gateway without --run-code-network")
	d.opts.Egress = nil
	assert.Nil(t, d.runEgress(&Call{Identity: anon}, skill, "run_1"), "--egress=off")
}

func hex64(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}
