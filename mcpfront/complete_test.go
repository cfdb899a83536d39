package mcpfront

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/skills"
)

// completionSkills: two versions of an action skill and an instruction
// skill in namespace acme, and one of each in namespace other.
func completionSkills(t *testing.T) string {
	dir := visibilitySkills(t)
	a2 := actionSkill("acme.a.run", "2.0.0", "Runs a, again.", "A.", "")
	a2["data/table.csv"] = "x,y\n"
	skillFiles(t, dir, "a2", a2)
	skillFiles(t, dir, "b2", instructionSkill("acme.b.guide", "1.1.0-rc.1", "Guide b, next.", "Do b next.\n"))
	return dir
}

func complete(t *testing.T, cs *mcp.ClientSession, ref *mcp.CompleteReference, arg, value string, ctx map[string]string) mcp.CompletionResultDetails {
	t.Helper()
	p := &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: arg, Value: value}}
	if ctx != nil {
		p.Context = &mcp.CompleteContext{Arguments: ctx}
	}
	res, err := cs.Complete(t.Context(), p)
	require.NoError(t, err)
	require.NotNil(t, res.Completion.Values, "values is always an array")
	return res.Completion
}

func withoutGuideName(xs []string) []string {
	var out []string
	for _, x := range xs {
		if x != skills.GuideName {
			out = append(out, x)
		}
	}
	return out
}

// The skill:// template's variables complete to the skill names, versions
// and paths the caller may read, each narrowed by the value typed so far
// and by the variables already chosen.
func TestCompleteSkillTemplate(t *testing.T) {
	g := newGateway(t, gatewayOptions{skillsDir: completionSkills(t), authFile: visibilityAuth()})
	tmpl := &mcp.CompleteReference{Type: "ref/resource", URI: skillTemplate}
	all := g.client(t, tokenAll, nil)
	reader := g.client(t, tokenReader, nil)
	runner := g.client(t, tokenRunner, nil)

	caps := all.InitializeResult().Capabilities
	require.NotNil(t, caps.Completions, "the completions capability is declared")
	require.NotNil(t, caps.Resources)
	assert.True(t, caps.Resources.Subscribe, "so is resources.subscribe")

	c := complete(t, all, tmpl, "name", "", nil)
	assert.Equal(t, []string{"acme.a.run", "acme.b.guide", "other.c.run", "other.d.guide"}, withoutGuideName(c.Values))
	assert.Equal(t, []string{"acme.a.run", "acme.b.guide"}, withoutGuideName(complete(t, reader, tmpl, "name", "", nil).Values),
		"only the namespaces of the caller")
	assert.Equal(t, []string{"acme.a.run"}, complete(t, all, tmpl, "name", "acme.a", nil).Values)
	assert.Empty(t, complete(t, all, tmpl, "name", "zzz", nil).Values)
	assert.Empty(t, complete(t, runner, tmpl, "name", "", nil).Values, "no skill files without read_skill_file")

	assert.Equal(t, []string{"2.0.0", "1.0.0"}, complete(t, all, tmpl, "version", "", map[string]string{"name": "acme.a.run"}).Values,
		"highest first")
	assert.Equal(t, []string{"1.0.0"}, complete(t, all, tmpl, "version", "1", map[string]string{"name": "acme.a.run"}).Values)
	assert.Equal(t, []string{"1.1.0-rc.1", "1.0.0"}, complete(t, reader, tmpl, "version", "", map[string]string{"name": "acme.b.guide"}).Values,
		"pre-releases too: each is readable")
	assert.Empty(t, complete(t, reader, tmpl, "version", "", map[string]string{"name": "other.c.run"}).Values,
		"a hidden skill's versions are not told")
	assert.Empty(t, complete(t, all, tmpl, "version", "", nil).Values, "no name chosen")
	assert.Empty(t, complete(t, all, tmpl, "version", "", map[string]string{"name": "acme.nope"}).Values)

	assert.Equal(t, []string{"SKILL.md", "code/main.py", "data/table.csv", "skill.toml"},
		complete(t, all, tmpl, "path", "", map[string]string{"name": "acme.a.run"}).Values, "the default version's files")
	assert.Equal(t, []string{"SKILL.md", "code/main.py", "skill.toml"},
		complete(t, all, tmpl, "path", "", map[string]string{"name": "acme.a.run", "version": "1.0.0"}).Values)
	assert.Equal(t, []string{"data/table.csv"},
		complete(t, reader, tmpl, "path", "da", map[string]string{"name": "acme.a.run", "version": "2.0.0"}).Values)
	assert.Empty(t, complete(t, reader, tmpl, "path", "", map[string]string{"name": "other.c.run"}).Values)
	assert.Empty(t, complete(t, all, tmpl, "path", "", map[string]string{"name": "acme.a.run", "version": "9.9.9"}).Values)
	assert.Empty(t, complete(t, all, tmpl, "bogus", "", map[string]string{"name": "acme.a.run"}).Values)

	assert.Empty(t, complete(t, all, &mcp.CompleteReference{Type: "ref/resource", URI: "blob://{blob_id}"}, "blob_id", "", nil).Values,
		"blob ids are not listed")
	assert.Empty(t, complete(t, all, &mcp.CompleteReference{Type: "ref/resource", URI: "test://template/{id}"}, "id", "", nil).Values,
		"a template the gateway does not serve")
}

// A prompt's version argument completes to the versions of its skill,
// for a prompt the caller may see; other prompts and arguments get none.
func TestCompletePromptArguments(t *testing.T) {
	g := newGateway(t, gatewayOptions{skillsDir: completionSkills(t), authFile: visibilityAuth()})
	all := g.client(t, tokenAll, nil)
	reader := g.client(t, tokenReader, nil)
	runner := g.client(t, tokenRunner, nil)
	prompt := func(name string) *mcp.CompleteReference {
		return &mcp.CompleteReference{Type: "ref/prompt", Name: name}
	}

	var guide *mcp.Prompt
	for p, err := range all.Prompts(t.Context(), nil) {
		require.NoError(t, err)
		if p.Name == "acme.b.guide" {
			guide = p
		}
	}
	require.NotNil(t, guide)
	require.Len(t, guide.Arguments, 1)
	assert.Equal(t, "version", guide.Arguments[0].Name)
	assert.False(t, guide.Arguments[0].Required)

	assert.Equal(t, []string{"1.1.0-rc.1", "1.0.0"}, complete(t, reader, prompt("acme.b.guide"), "version", "", nil).Values)
	assert.Equal(t, []string{"1.1.0-rc.1"}, complete(t, reader, prompt("acme.b.guide"), "version", "1.1", nil).Values)
	assert.Empty(t, complete(t, reader, prompt("other.d.guide"), "version", "", nil).Values, "a hidden prompt")
	assert.Empty(t, complete(t, runner, prompt("acme.b.guide"), "version", "", nil).Values, "no prompts without describe_skill")
	assert.Empty(t, complete(t, all, prompt("acme.a.run"), "version", "", nil).Values, "an action skill is no prompt")
	assert.Empty(t, complete(t, all, prompt("test_prompt_with_arguments"), "arg1", "par", nil).Values, "an unknown prompt")
	assert.Empty(t, complete(t, all, prompt("acme.b.guide"), "topic", "", nil).Values, "an argument it does not have")

	// The argument chooses the version the prompt is made of.
	pr, err := all.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "acme.b.guide", Arguments: map[string]string{"version": "1.1.0-rc.1"}})
	require.NoError(t, err)
	assert.Equal(t, "Do b next.\n", pr.Messages[0].Content.(*mcp.TextContent).Text)
	pr, err = all.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "acme.b.guide"})
	require.NoError(t, err)
	assert.Equal(t, "Do b.\n", pr.Messages[0].Content.(*mcp.TextContent).Text, "the default: the highest release")
	_, err = all.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "acme.b.guide", Arguments: map[string]string{"version": "7.0.0"}})
	assert.Equal(t, "SKILL_NOT_FOUND", stringCode(t, err))
}

// stringCode is the Skills Protocol string_code of a JSON-RPC error.
func stringCode(t *testing.T, err error) string {
	t.Helper()
	var data struct {
		StringCode string `json:"string_code"`
	}
	require.NoError(t, json.Unmarshal(rpcErr(t, err).Data, &data))
	return data.StringCode
}

// Completions are bounded to 100 values, with the total and hasMore; a
// request without a ref or an argument name is refused.
func TestCompleteBoundsAndBadRequests(t *testing.T) {
	dir := t.TempDir()
	for i := range 130 {
		n := fmt.Sprintf("acme.many.s%03d", i)
		skillFiles(t, dir, n, instructionSkill(n, "1.0.0", "S.", "S.\n"))
	}
	g := newGateway(t, gatewayOptions{skillsDir: dir})
	cs := g.client(t, "", nil)
	c := complete(t, cs, &mcp.CompleteReference{Type: "ref/resource", URI: skillTemplate}, "name", "acme.many.", nil)
	assert.Len(t, c.Values, 100)
	assert.Equal(t, 130, c.Total)
	assert.True(t, c.HasMore)
	assert.Equal(t, "acme.many.s000", c.Values[0])

	_, err := cs.Complete(t.Context(), &mcp.CompleteParams{Argument: mcp.CompleteParamsArgument{Name: "name"}})
	assert.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcErr(t, err).Code, "no ref")
	_, err = cs.Complete(t.Context(), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: skillTemplate}})
	assert.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcErr(t, err).Code, "no argument name")
}
