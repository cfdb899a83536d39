package mcpfront

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// toolsByName lists the tools a client sees, by name.
func toolsByName(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	out := map[string]*mcp.Tool{}
	for tl, err := range cs.Tools(t.Context(), nil) {
		require.NoError(t, err)
		out[tl.Name] = tl
	}
	return out
}

// After a reload, Refresh makes the tools, prompts and skill files match
// the catalog: what is gone is removed, what changed is replaced, what is
// new is added, and each skill is offered at its default version.
func TestRefreshFollowsTheCatalog(t *testing.T) {
	dir := t.TempDir()
	skillFiles(t, dir, "a1", actionSkill("acme.a.run", "1.0.0", "A one.", "A.", ""))
	skillFiles(t, dir, "b", instructionSkill("acme.b.guide", "1.0.0", "Guide b.", "B.\n"))
	skillFiles(t, dir, "c", actionSkill("acme.c.run", "1.0.0", "C.", "C.", ""))
	skillFiles(t, dir, "d", instructionSkill("acme.d.guide", "1.0.0", "Guide d.", "D.\n"))
	g := newGateway(t, gatewayOptions{skillsDir: dir, mcp: Options{Tools: ToolsSkills}})
	cs := g.client(t, "", nil)

	before := seenBy(t, cs)
	assert.ElementsMatch(t, []string{"acme.a.run", "acme.c.run"}, before.tools)
	assert.ElementsMatch(t, []string{"acme.b.guide", "acme.d.guide"}, before.prompts)
	assert.Contains(t, before.resources, "skill://acme.c.run/1.0.0/code/main.py")
	assert.Equal(t, "A one.\n\nA.", toolsByName(t, cs)["acme.a.run"].Description)

	// A second version of a (the new default), c and d gone, e new, b's
	// body changed and a file added to it.
	skillFiles(t, dir, "a2", actionSkill("acme.a.run", "2.0.0", "A two.", "A.", ""))
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "c")))
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "d")))
	skillFiles(t, dir, "e", actionSkill("acme.e.run", "1.0.0", "E.", "E.", ""))
	b := instructionSkill("acme.b.guide", "1.0.0", "Guide b, revised.", "B, revised.\n")
	b["notes.md"] = "notes\n"
	skillFiles(t, dir, "b", b)
	_, err := g.reg.Reload()
	require.NoError(t, err)
	g.srv.Refresh()

	after := seenBy(t, cs)
	assert.ElementsMatch(t, []string{"acme.a.run", "acme.e.run"}, after.tools)
	assert.ElementsMatch(t, []string{"acme.b.guide"}, after.prompts)
	assert.ElementsMatch(t, []string{
		"skill://acme.a.run/2.0.0/SKILL.md", "skill://acme.a.run/2.0.0/code/main.py", "skill://acme.a.run/2.0.0/skill.toml",
		"skill://acme.b.guide/1.0.0/SKILL.md", "skill://acme.b.guide/1.0.0/notes.md", "skill://acme.b.guide/1.0.0/skill.toml",
		"skill://acme.e.run/1.0.0/SKILL.md", "skill://acme.e.run/1.0.0/code/main.py", "skill://acme.e.run/1.0.0/skill.toml",
	}, after.resources, "the default version's files only; the removed skills' files are gone")
	assert.Equal(t, "A two.\n\nA.", toolsByName(t, cs)["acme.a.run"].Description, "the tool of the new default version")
	for p, err := range cs.Prompts(t.Context(), nil) {
		require.NoError(t, err)
		if p.Name == "acme.b.guide" {
			assert.Equal(t, "Guide b, revised.", p.Description)
		}
	}
	pr, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "acme.b.guide"})
	require.NoError(t, err)
	assert.Equal(t, "B, revised.\n", pr.Messages[0].Content.(*mcp.TextContent).Text)
	_, err = cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "skill://acme.c.run/1.0.0/code/main.py"})
	assert.Equal(t, mcp.ResourceNotFoundError("skill://acme.c.run/1.0.0/code/main.py"), error(rpcErr(t, err)))
	_, err = cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "acme.d.guide"})
	assert.Equal(t, `unknown prompt "acme.d.guide"`, rpcErr(t, err).Message)
	_, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "acme.c.run", Arguments: map[string]any{}})
	assert.Equal(t, `unknown tool "acme.c.run"`, rpcErr(t, err).Message)

	// A refresh with nothing changed keeps everything.
	g.srv.Refresh()
	assert.Equal(t, after, seenBy(t, cs))
}

// logLines decodes the JSON lines of a zerolog buffer.
func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		out = append(out, m)
	}
	return out
}

// Skills are offered as tools of their own up to MaxSkillTools action
// skills (instruction skills do not count), exactly that many included;
// past it they are reached through the protocol tools only, which is
// logged once per refresh, unless the tools mode offers no skill tools.
func TestMaxSkillToolsBoundary(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"p", "q"} {
		skillFiles(t, dir, n, actionSkill("acme."+n+".run", "1.0.0", "Runs "+n+".", "R.", ""))
	}
	for _, n := range []string{"x", "y", "z"} {
		skillFiles(t, dir, n, instructionSkill("acme."+n+".guide", "1.0.0", "Guide "+n+".", "G.\n"))
	}
	skillTools := func(mode string, limit int) ([]string, []map[string]any) {
		t.Helper()
		var buf bytes.Buffer
		g := newGateway(t, gatewayOptions{skillsDir: dir, mcp: Options{Tools: mode, MaxSkillTools: limit,
			Logger: zerolog.New(&buf).Level(zerolog.WarnLevel)}})
		var names []string
		for _, n := range listTools(t, g.client(t, "", nil)) {
			if strings.HasPrefix(n, "acme.") {
				names = append(names, n)
			}
		}
		return names, logLines(t, &buf)
	}

	names, logs := skillTools(ToolsBoth, 2)
	assert.ElementsMatch(t, []string{"acme.p.run", "acme.q.run"}, names, "exactly at the limit")
	assert.Empty(t, logs)

	names, logs = skillTools(ToolsSkills, 1)
	assert.Empty(t, names, "one over the limit")
	require.Len(t, logs, 1)
	assert.Equal(t, "warn", logs[0]["level"])
	assert.Equal(t, float64(2), logs[0]["action_skills"])
	assert.Equal(t, float64(1), logs[0]["max_skill_tools"])
	assert.Contains(t, logs[0]["message"], "more action skills than --mcp-max-skill-tools")

	names, logs = skillTools(ToolsProtocol, 1)
	assert.Empty(t, names)
	assert.Empty(t, logs, "no skill tools are offered in this mode anyway")

	names, _ = skillTools(ToolsBoth, 0)
	assert.Len(t, names, 2, "0 is the default of 64")
	names, _ = skillTools(ToolsBoth, -1)
	assert.Len(t, names, 2, "so is a negative bound")
}
