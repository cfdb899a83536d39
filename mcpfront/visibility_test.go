package mcpfront

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/skills"
)

const (
	tokenAll    = "sgt_mcp-visibility-all"
	tokenReader = "sgt_mcp-visibility-reader"
	tokenRunner = "sgt_mcp-visibility-runner"
)

// visibilityAuth: "all" may do everything; "reader" may browse and read
// the files of namespace acme; "runner" may run the skills of namespace
// other and create and read blobs, nothing else.
func visibilityAuth() string {
	return "identities:\n" +
		"  - name: all\n    class: agent\n    tokens: [" + auth.HashToken(tokenAll) + "]\n" +
		"    methods: [\"*\"]\n    namespaces: [\"*\"]\n" +
		"  - name: reader\n    class: agent\n    tokens: [" + auth.HashToken(tokenReader) + "]\n" +
		"    methods: [list_skills, describe_skill, read_skill_file]\n    namespaces: [acme]\n" +
		"  - name: runner\n    class: agent\n    tokens: [" + auth.HashToken(tokenRunner) + "]\n" +
		"    methods: [execute_skill, create_blob, read_blob]\n    namespaces: [other]\n"
}

// visibilitySkills: an action and an instruction skill in each of the
// namespaces acme and other.
func visibilitySkills(t *testing.T) string {
	dir := t.TempDir()
	skillFiles(t, dir, "a", actionSkill("acme.a.run", "1.0.0", "Runs a.", "A.", ""))
	skillFiles(t, dir, "b", instructionSkill("acme.b.guide", "1.0.0", "Guide b.", "Do b.\n"))
	skillFiles(t, dir, "c", actionSkill("other.c.run", "1.0.0", "Runs c.", "C.", ""))
	skillFiles(t, dir, "d", instructionSkill("other.d.guide", "1.0.0", "Guide d.", "Do d.\n"))
	return dir
}

type seen struct {
	tools, resources, templates, prompts []string
}

func seenBy(t *testing.T, cs *mcp.ClientSession) seen {
	t.Helper()
	ctx := t.Context()
	var s seen
	s.tools = listTools(t, cs)
	for r, err := range cs.Resources(ctx, nil) {
		require.NoError(t, err)
		s.resources = append(s.resources, r.URI)
	}
	for rt, err := range cs.ResourceTemplates(ctx, nil) {
		require.NoError(t, err)
		s.templates = append(s.templates, rt.URITemplate)
	}
	for p, err := range cs.Prompts(ctx, nil) {
		require.NoError(t, err)
		s.prompts = append(s.prompts, p.Name)
	}
	return s.withoutGuide()
}

// withoutGuide leaves out the built-in skills.protocol.guide, which every
// identity sees whatever its namespaces (TestGuideOfferedWhateverTheNamespaces):
// the tests below are about the skills of the catalog.
func (s seen) withoutGuide() seen {
	drop := func(xs []string) []string {
		var out []string
		for _, x := range xs {
			if !strings.Contains(x, skills.GuideName) {
				out = append(out, x)
			}
		}
		return out
	}
	return seen{drop(s.tools), drop(s.resources), s.templates, drop(s.prompts)}
}

// listedSkills is the names a list_skills answer gives, the guide left out.
func listedSkills(t *testing.T, res *mcp.CallToolResult) []string {
	t.Helper()
	var page struct {
		Skills []struct{ Name string } `json:"skills"`
	}
	require.NoError(t, json.Unmarshal([]byte(textOf(res)), &page))
	var names []string
	for _, s := range page.Skills {
		if s.Name != skills.GuideName {
			names = append(names, s.Name)
		}
	}
	return names
}

// Each identity lists only the tools, skill files, blob template and
// prompts its methods and namespaces reach.
func TestListsFilteredByIdentity(t *testing.T) {
	g := newGateway(t, gatewayOptions{skillsDir: visibilitySkills(t), authFile: visibilityAuth()})
	acmeFiles := []string{"skill://acme.a.run/1.0.0/SKILL.md", "skill://acme.a.run/1.0.0/code/main.py",
		"skill://acme.a.run/1.0.0/skill.toml", "skill://acme.b.guide/1.0.0/SKILL.md", "skill://acme.b.guide/1.0.0/skill.toml"}
	otherFiles := []string{"skill://other.c.run/1.0.0/SKILL.md", "skill://other.c.run/1.0.0/code/main.py",
		"skill://other.c.run/1.0.0/skill.toml", "skill://other.d.guide/1.0.0/SKILL.md", "skill://other.d.guide/1.0.0/skill.toml"}

	all := seenBy(t, g.client(t, tokenAll, nil))
	assert.ElementsMatch(t, []string{"acme.a.run", "other.c.run", "create_blob", "describe_skill", "list_skills",
		"read_blob", "read_skill_file", "run_code"}, all.tools)
	assert.ElementsMatch(t, append(append([]string(nil), acmeFiles...), otherFiles...), all.resources)
	assert.ElementsMatch(t, []string{"blob://{blob_id}", skillTemplate}, all.templates)
	assert.ElementsMatch(t, []string{"acme.b.guide", "other.d.guide"}, all.prompts)

	reader := seenBy(t, g.client(t, tokenReader, nil))
	assert.ElementsMatch(t, []string{"describe_skill", "list_skills", "read_skill_file"}, reader.tools,
		"protocol tools of its methods; no skill tool without execute_skill")
	assert.ElementsMatch(t, acmeFiles, reader.resources, "the files of its namespace only")
	assert.Equal(t, []string{skillTemplate}, reader.templates, "no blob template without read_blob")
	assert.Equal(t, []string{"acme.b.guide"}, reader.prompts)

	runner := seenBy(t, g.client(t, tokenRunner, nil))
	assert.ElementsMatch(t, []string{"other.c.run", "create_blob", "read_blob"}, runner.tools)
	assert.Empty(t, runner.resources, "no skill file without read_skill_file")
	assert.Equal(t, []string{"blob://{blob_id}"}, runner.templates)
	assert.Empty(t, runner.prompts, "no prompt without describe_skill")
}

// rpcErr is the JSON-RPC error a call ended with.
func rpcErr(t *testing.T, err error) *jsonrpc.Error {
	t.Helper()
	var we *jsonrpc.Error
	require.True(t, errors.As(err, &we), "not a JSON-RPC error: %v", err)
	return we
}

// A tool, resource or prompt the identity cannot see is answered exactly
// as one that does not exist: the answer does not tell them apart.
func TestHiddenNamesAnsweredAsUnknown(t *testing.T) {
	g := newGateway(t, gatewayOptions{skillsDir: visibilitySkills(t), authFile: visibilityAuth()})
	ctx := t.Context()
	reader := g.client(t, tokenReader, nil)
	runner := g.client(t, tokenRunner, nil)

	callErr := func(cs *mcp.ClientSession, name string) *jsonrpc.Error {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		return rpcErr(t, err)
	}
	for _, name := range []string{"acme.a.run", "other.c.run", "run_code", "create_blob"} {
		e := callErr(reader, name)
		assert.Equal(t, int64(jsonrpc.CodeInvalidParams), e.Code, name)
		assert.Equal(t, `unknown tool "`+name+`"`, e.Message)
	}
	assert.Equal(t, callErr(reader, "acme.zz.none"), &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `unknown tool "acme.zz.none"`},
		"the SDK's own answer for a tool that does not exist")
	for _, name := range []string{"acme.a.run", "list_skills"} {
		e := callErr(runner, name)
		assert.Equal(t, `unknown tool "`+name+`"`, e.Message)
	}

	readErr := func(cs *mcp.ClientSession, uri string) *jsonrpc.Error {
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		return rpcErr(t, err)
	}
	notFound := func(uri string) *jsonrpc.Error { return mcp.ResourceNotFoundError(uri).(*jsonrpc.Error) }
	for _, uri := range []string{"skill://other.d.guide/1.0.0/SKILL.md", "skill://other.zz/1.0.0/SKILL.md", "blob://00ff"} {
		assert.Equal(t, notFound(uri), readErr(reader, uri), uri)
	}
	assert.Equal(t, notFound("skill://acme.b.guide/1.0.0/SKILL.md"), readErr(runner, "skill://acme.b.guide/1.0.0/SKILL.md"),
		"without read_skill_file, even its own namespace's files are unknown")

	promptErr := func(cs *mcp.ClientSession, name string) *jsonrpc.Error {
		_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name})
		return rpcErr(t, err)
	}
	want := func(name string) *jsonrpc.Error {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `unknown prompt "` + name + `"`}
	}
	assert.Equal(t, want("other.d.guide"), promptErr(reader, "other.d.guide"))
	assert.Equal(t, want("acme.zz.none"), promptErr(reader, "acme.zz.none"))
	assert.Equal(t, want("other.d.guide"), promptErr(runner, "other.d.guide"), "no describe_skill, no prompt")

	// What each identity sees, it gets.
	pr, err := reader.GetPrompt(ctx, &mcp.GetPromptParams{Name: "acme.b.guide"})
	require.NoError(t, err)
	assert.Equal(t, "Do b.\n", pr.Messages[0].Content.(*mcp.TextContent).Text)
	rr, err := reader.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://acme.b.guide/1.0.0/SKILL.md"})
	require.NoError(t, err)
	assert.Contains(t, rr.Contents[0].Text, "Do b.")
	res, err := runner.CallTool(ctx, &mcp.CallToolParams{Name: "other.c.run", Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.False(t, res.IsError, textOf(res))
	res, err = reader.CallTool(ctx, &mcp.CallToolParams{Name: "list_skills", Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.Equal(t, []string{"acme.a.run", "acme.b.guide"}, listedSkills(t, res), "list_skills itself sees namespace acme only")
}

// A session with no identity (stdio without Options.Identity) sees
// nothing and may call nothing; the same server with an identity serves
// it, over the SDK's in-memory transport, as `skillgate mcp` does.
func TestIdentityOfALocalSession(t *testing.T) {
	dir := visibilitySkills(t)
	g := newGateway(t, gatewayOptions{skillsDir: dir})
	cs := g.inMemory(t)
	s := seenBy(t, cs)
	assert.Empty(t, s.tools)
	assert.Empty(t, s.resources)
	assert.Empty(t, s.templates)
	assert.Empty(t, s.prompts)
	_, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "acme.b.guide"})
	assert.Equal(t, `unknown prompt "acme.b.guide"`, rpcErr(t, err).Message)

	g = newGateway(t, gatewayOptions{skillsDir: dir, mcp: Options{Identity: auth.Anonymous(auth.Limits{})}})
	cs = g.inMemory(t)
	s = seenBy(t, cs)
	assert.Len(t, s.tools, 8)
	assert.Len(t, s.resources, 10)
	assert.ElementsMatch(t, []string{"blob://{blob_id}", skillTemplate}, s.templates)
	assert.Len(t, s.prompts, 2)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_skills", Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.Equal(t, []string{"acme.a.run", "acme.b.guide", "other.c.run", "other.d.guide"}, listedSkills(t, res))
}

// A rate-limited identity gets the protocol's RATE_LIMITED error, with
// its data, from every kind of MCP request that calls a method: tools of
// skills and of the protocol, skill files, blobs and prompts. The burst of
// three is the SDK client's connect (server/discover, then initialize)
// and one call.
func TestRateLimitedOnEveryKindOfRequest(t *testing.T) {
	const token = "sgt_mcp-visibility-limited"
	authFile := "identities:\n  - name: limited\n    class: agent\n    tokens: [" + auth.HashToken(token) + "]\n" +
		"    methods: [\"*\"]\n    namespaces: [\"*\"]\n    limits: {requests_per_second: 0.001, burst: 3}\n"
	g := newGateway(t, gatewayOptions{skillsDir: visibilitySkills(t), authFile: authFile})
	cs := g.client(t, token, nil)
	ctx := t.Context()
	id := createBlob(t, cs, map[string]any{"content": "the one call the burst allows"})

	limited := func(what string, err error) {
		t.Helper()
		e := rpcErr(t, err)
		assert.Contains(t, string(e.Data), `"string_code":"RATE_LIMITED"`, what)
	}
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "acme.a.run", Arguments: map[string]any{}})
	limited("skill tool", err)
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_skills", Arguments: map[string]any{}})
	limited("protocol tool", err)
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "python", "code": "x"}})
	limited("run tool", err)
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://acme.b.guide/1.0.0/SKILL.md"})
	limited("skill file", err)
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "blob://" + strings.TrimPrefix(id, "blob:")})
	limited("blob", err)
	_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "acme.b.guide"})
	limited("prompt", err)
}

// The built-in guide is for every identity that may read skills, whatever
// its namespaces, as it is through dispatch: an identity limited to acme
// is offered the guide's prompt and files and gets them; one without
// describe_skill and read_skill_file is offered neither.
func TestGuideOfferedWhateverTheNamespaces(t *testing.T) {
	g := newGateway(t, gatewayOptions{skillsDir: visibilitySkills(t), authFile: visibilityAuth()})
	ctx := t.Context()
	reader := g.client(t, tokenReader, nil)
	var prompts, files []string
	for p, err := range reader.Prompts(ctx, nil) {
		require.NoError(t, err)
		prompts = append(prompts, p.Name)
	}
	assert.Contains(t, prompts, skills.GuideName)
	for r, err := range reader.Resources(ctx, nil) {
		require.NoError(t, err)
		if strings.HasPrefix(r.URI, "skill://"+skills.GuideName+"/") {
			files = append(files, r.URI)
		}
	}
	require.NotEmpty(t, files, "the guide's files are offered")
	pr, err := reader.GetPrompt(ctx, &mcp.GetPromptParams{Name: skills.GuideName})
	require.NoError(t, err)
	assert.NotEmpty(t, pr.Messages)
	rr, err := reader.ReadResource(ctx, &mcp.ReadResourceParams{URI: files[0]})
	require.NoError(t, err)
	assert.NotEmpty(t, rr.Contents)

	runner := g.client(t, tokenRunner, nil)
	for p, err := range runner.Prompts(ctx, nil) {
		require.NoError(t, err)
		assert.NotEqual(t, skills.GuideName, p.Name, "no describe_skill: no prompt")
	}
	_, err = runner.GetPrompt(ctx, &mcp.GetPromptParams{Name: skills.GuideName})
	assert.Error(t, err)
	_, err = runner.ReadResource(ctx, &mcp.ReadResourceParams{URI: files[0]})
	assert.Error(t, err, "no read_skill_file: no file")
}
