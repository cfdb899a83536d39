package dispatch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/transport"
)

const tokenAdmin = "sgt_admin-token-for-admin-tests"

// newAdminEnv serves alice and bob (agents with every method) and ops
// (class admin), with a fake runner.
func newAdminEnv(t *testing.T) *env {
	file := fmt.Sprintf(`identities:
  - {name: alice, class: agent, tokens: [%s], methods: ["*"], namespaces: ["*"]}
  - {name: bob, class: agent, tokens: [%s], methods: ["*"], namespaces: ["*"]}
  - {name: ops, class: admin, tokens: [%s], methods: ["*"], namespaces: ["*"]}
`, auth.HashToken(tokenAlice), auth.HashToken(tokenBob), auth.HashToken(tokenAdmin))
	path := filepath.Join(t.TempDir(), "auth.yaml")
	require.NoError(t, os.WriteFile(path, []byte(file), 0o600))
	store, err := auth.Load(path, auth.Options{Logger: zerolog.Nop(), Methods: GrantableMethods()})
	require.NoError(t, err)
	return newEnvOpts(t, examplesDir(), 256<<10, func(o *Options) {
		o.Authn = store
		o.Runner = &fakeRunner{result: completed(`{}`)}
		o.Status = StatusOptions{SandboxWorkers: 3, BlobQuotaBytes: 1 << 20,
			Connections: func(m map[string]int) { m["framed"] = 7 }}
	})
}

type listed struct {
	Runs []struct {
		RunID    string `json:"run_id"`
		Identity string `json:"identity"`
	} `json:"runs"`
}

func listRuns(t *testing.T, c caller, params string) (listed, *transport.Error) {
	t.Helper()
	var out listed
	res, err := c.call(MethodListRuns, params)
	if err == nil {
		require.NoError(t, json.Unmarshal(res, &out))
	}
	return out, err
}

// An admin lists every identity's runs with all_identities, each naming
// its identity, and reads any of them with get_run; anyone else asking
// for all is PERMISSION_DENIED and still sees only its own runs.
func TestAdminListsEveryIdentitysRuns(t *testing.T) {
	e := newAdminEnv(t)
	alice, bob, ops := e.as(tokenAlice), e.as(tokenBob), e.as(tokenAdmin)
	for i := range alice {
		res, err := alice[i].call(MethodRunCode, `{"language":"python","code":"def main(args):\n    return {}"}`)
		require.Nil(t, err, "%v", err)
		var run struct {
			RunID string `json:"run_id"`
		}
		require.NoError(t, json.Unmarshal(res, &run))

		page, err := listRuns(t, ops[i], `{"all_identities":true}`)
		require.Nil(t, err, "%v", err)
		var found bool
		for _, r := range page.Runs {
			if r.RunID == run.RunID {
				found = true
				assert.Equal(t, "alice", r.Identity)
			}
		}
		assert.True(t, found, "the admin sees alice's run over %s", ops[i].name())
		_, err = ops[i].call(MethodGetRun, `{"run_id":"`+run.RunID+`"}`)
		assert.Nil(t, err, "an admin reads any run: %v", err)

		_, err = listRuns(t, bob[i], `{"all_identities":true}`)
		require.NotNil(t, err)
		assert.Equal(t, StringPermissionDenied, err.EffectiveCode(), bob[i].name())
		page, err = listRuns(t, bob[i], `{}`)
		require.Nil(t, err, "%v", err)
		assert.Empty(t, page.Runs, "bob sees none of alice's runs")
		_, err = bob[i].call(MethodGetRun, `{"run_id":"`+run.RunID+`"}`)
		require.NotNil(t, err)
		assert.Equal(t, StringRunNotFound, err.EffectiveCode())
		mine, err := listRuns(t, ops[i], `{"all_identities":false}`)
		require.Nil(t, err, "%v", err)
		assert.Empty(t, mine.Runs, "without all_identities an admin lists its own runs")
		_, err = listRuns(t, ops[i], `{"all_identities":"yes"}`)
		require.NotNil(t, err)
		assert.Equal(t, transport.StringInvalidParams, err.EffectiveCode())
	}
}

// gateway_status answers an admin with the gateway's load, and refuses
// every other class even when its methods include it.
func TestGatewayStatusIsForAdmins(t *testing.T) {
	e := newAdminEnv(t)
	for _, c := range e.as(tokenAdmin) {
		res, err := c.call(MethodGatewayStatus, `{}`)
		require.Nil(t, err, "%v", err)
		var st GatewayStatus
		require.NoError(t, json.Unmarshal(res, &st))
		assert.Equal(t, 7, st.Connections["framed"])
		assert.EqualValues(t, 1<<20, st.Blobs.QuotaBytes)
		assert.Zero(t, st.Requests[c.name()], "the status call itself is not counted")
		assert.Nil(t, st.Sandbox, "a fake runner has no pool to report")
	}
	for _, c := range e.as(tokenAlice) {
		_, err := c.call(MethodGatewayStatus, `{}`)
		require.NotNil(t, err)
		assert.Equal(t, StringPermissionDenied, err.EffectiveCode(), c.name())
	}
}

// An open gateway's anonymous identity is its operator.
func TestGatewayStatusOpenGateway(t *testing.T) {
	e, _ := newExecEnv(t, completed(`{}`))
	res, err := e.front(t).call(MethodGatewayStatus, `{}`)
	require.Nil(t, err, "%v", err)
	assert.Contains(t, string(res), `"blobs"`)
	_, err = e.front(t).call(MethodListRuns, `{"all_identities":true}`)
	assert.Nil(t, err, "%v", err)
}
