package main

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Errors tell the truth through the whole gateway, with real sandbox runs:
// user code cannot pass for an infrastructure failure, a non-object output
// and logs over their cap are named for what they are, and client
// mistakes are -32602.
func TestHonestRunErrorsThroughTheGateway(t *testing.T) {
	requireSandbox(t)
	g := startGateway(t, "--skills-dir", "../../examples/skills", "--sandbox-workers", "1")
	c := rpcClient{t, "http://" + g.addrs["http"] + "/rpc"}
	type run struct {
		Status  string
		Summary string
		Error   *struct{ Type, Message string }
	}
	runCode := func(code string) run {
		t.Helper()
		res, errCode := c.call("run_code", `{"language":"python","code":`+jsonString(code)+`,"timeout_ms":20000}`)
		require.Empty(t, errCode, code)
		var r run
		require.NoError(t, json.Unmarshal(res, &r))
		require.Equal(t, "failed", r.Status, code)
		require.NotNil(t, r.Error, code)
		return r
	}

	for _, name := range []string{"SANDBOX_ERROR", "EXECUTION_TIMEOUT", "MEMORY_LIMIT_EXCEEDED", "OUTPUT_TOO_LARGE"} {
		r := runCode("class " + name + "(Exception):\n    pass\n\ndef main(args):\n    raise " + name + "('fake')\n")
		assert.Equal(t, "user."+name, r.Error.Type)
	}
	metrics := scrape(t, "http://"+g.addrs["metrics"]+"/metrics")
	assert.NotRegexp(t, regexp.MustCompile(`skillgate_sandbox_runs_total\{[^}]*reason="sandbox_error"[^}]*\} [1-9]`), metrics,
		"no user exception counts as an infrastructure failure")
	assert.Regexp(t, regexp.MustCompile(`skillgate_sandbox_runs_total\{[^}]*reason="exception"[^}]*\} 4`), metrics)

	r := runCode("def main(args):\n    return [1, 2]\n")
	assert.Equal(t, "INVALID_OUTPUT", r.Error.Type)

	r = runCode("import sys\n\ndef main(args):\n    for _ in range(20):\n        sys.stdout.write('x' * 65536)\n    return {}\n")
	assert.Equal(t, "OUTPUT_TOO_LARGE", r.Error.Type)
	assert.NotContains(t, r.Summary, "4 KB")
	assert.Contains(t, r.Summary, "stdout/stderr", "the summary names the logs cap")

	for _, params := range []string{
		`{"language":"python","code":"def main(a):\n    return {}","entrypoint":"not-a-name"}`,
		`{"language":"python","code":"x","mount_skills":["acme.math.add@1.0.0","acme.math.add@1.1.0"]}`,
	} {
		_, errCode := c.call("run_code", params)
		assert.Equal(t, "JSONRPC_INVALID_PARAMS", errCode, params)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}
