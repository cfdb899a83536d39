package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An agent runs an Agent Skill's bundled script as its SKILL.md says, from
// the skill's folder, on a blob it uploaded: run_code in bash, with the
// skill mounted although it is an instruction skill.
func TestAgentSkillScriptThroughTheGateway(t *testing.T) {
	requireSandbox(t)
	g := startGateway(t, "--skills-dir", "../../examples/skills", "--sandbox-workers", "2", "--data-dir", t.TempDir())
	c := rpcClient{t, "http://" + g.addrs["http"] + "/rpc"}

	res, code := c.call("create_blob", `{"content":"city,population\nLyon,522000\nNice,\n","kind":"text/csv"}`)
	require.Empty(t, code)
	var blob struct {
		BlobID string `json:"blob_id"`
	}
	require.NoError(t, json.Unmarshal(res, &blob))
	file := "/blobs/" + strings.TrimPrefix(blob.BlobID, "blob:")

	script := "cd /skills/csv-report && python3 scripts/summarize.py " + file + " /workspace/out.json && cat /workspace/out.json"
	params, err := json.Marshal(map[string]any{"language": "bash", "code": script,
		"mount_skills": []string{"csv-report"}, "input_blobs": []string{blob.BlobID}})
	require.NoError(t, err)
	r := c.run("run_code", string(params))
	require.Equal(t, "completed", r.Status, "%+v", r)
	assert.JSONEq(t, `{"exit_code":0}`, string(r.Output))
	assert.Contains(t, r.LogsPreview, `"population": {"empty": 1, "type": "int"}`)

	// A missing script is a failed run naming bash's status, with python's
	// complaint in the logs.
	r = c.run("run_code", `{"language":"bash","code":"cd /skills/csv-report && python3 scripts/missing.py","mount_skills":["csv-report"]}`)
	require.Equal(t, "failed", r.Status)
	assert.Equal(t, "bash exited with status 2", r.Error.Message)
	assert.Contains(t, r.LogsPreview, "No such file or directory")

	_, code = c.call("run_code", `{"language":"ruby","code":"puts 1"}`)
	assert.Equal(t, "JSONRPC_INVALID_PARAMS", code)
	_, code = c.call("run_code", `{"language":"bash","code":"true","entrypoint":"main"}`)
	assert.Equal(t, "JSONRPC_INVALID_PARAMS", code)
}
