package mcpfront

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/skills"
	"github.com/skillgate/skillgate/transport"
)

// invoke runs a Skills Protocol method for an MCP request; notify, when
// not nil, receives the notifications of a streamed run.
func (s *Server) invoke(ctx context.Context, req mcp.Request, method string, params json.RawMessage, notify dispatch.Notifier) (json.RawMessage, error) {
	id := s.identity(req)
	if id == nil {
		return nil, rpcError(transport.AppError(dispatch.StringAuthRequired, "Authentication required.").
			WithDetails(ErrNoIdentity.Error()))
	}
	markReached(ctx)
	res, e := s.opts.Front.Serve(ctx, &dispatch.Request{Method: method, Params: params, Identity: id, Remote: "mcp", Notify: notify})
	if e != nil {
		return nil, rpcError(e)
	}
	return res, nil
}

// skillTool is the tool of an action skill: its arguments are the run's
// args.
func skillTool(sk *skills.Skill) *mcp.Tool {
	desc := sk.Manifest.Description
	if sk.ShortDescription != "" && sk.ShortDescription != desc {
		desc = strings.TrimSpace(desc + "\n\n" + sk.ShortDescription)
	}
	t := &mcp.Tool{
		Name: sk.Manifest.Name, Title: sk.Title, Description: desc,
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}
	if in := sk.ArgsSchema(); in != nil {
		t.InputSchema = in
	}
	if out := sk.OutputSchema(); out != nil {
		t.OutputSchema = out
	}
	return t
}

func (s *Server) runSkill(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.Params.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage(`{}`)
		}
		// The run streams its events, which become the call's
		// notifications.
		call := map[string]any{"name": name, "args": args, "stream": true}
		if ids := blobArgs(args); len(ids) > 0 {
			call["input_blobs"] = ids
		}
		params, err := json.Marshal(call)
		if err != nil {
			return nil, err
		}
		res, err := s.invoke(ctx, req, dispatch.MethodExecuteSkill, params, s.runNotifier(req))
		if err != nil {
			return nil, err
		}
		return runResult(res)
	}
}

// blobArgs finds the blob ids among a run's top-level arguments (a string
// or a list of strings starting "blob:"): an MCP client cannot name
// input_blobs beside a tool's arguments, so a blob passed as an argument
// is made readable to the run. Ownership is checked as for input_blobs.
func blobArgs(args json.RawMessage) []string {
	var top map[string]any
	if json.Unmarshal(args, &top) != nil {
		return nil
	}
	var ids []string
	add := func(v any) {
		if s, ok := v.(string); ok && strings.HasPrefix(s, "blob:") && !slices.Contains(ids, s) {
			ids = append(ids, s)
		}
	}
	for _, v := range top {
		if list, ok := v.([]any); ok {
			for _, item := range list {
				add(item)
			}
			continue
		}
		add(v)
	}
	slices.Sort(ids)
	return ids
}

// runResult answers a run: a completed run's output as structuredContent
// and as text with a logs preview, its output blobs as resource links; a
// failed run as isError with its error type and summary.
func runResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	var r dispatch.RunResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	if r.Error != nil || r.Status != "completed" {
		text := r.Summary
		if r.Error != nil {
			text = r.Error.Type + ": " + r.Summary
		}
		if r.LogsPreview != "" {
			text += "\n\nlogs:\n" + r.LogsPreview
		}
		// No structuredContent: it would have to match the tool's
		// output schema, which describes a completed run's output.
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
	}
	out := r.Output
	if len(out) == 0 {
		out = json.RawMessage(`{}`)
	}
	text := string(out)
	if r.LogsPreview != "" {
		text += "\n\nlogs:\n" + r.LogsPreview
	}
	content := []mcp.Content{&mcp.TextContent{Text: text}}
	for _, b := range r.OutputBlobs {
		content = append(content, &mcp.ResourceLink{URI: blobURI(b), Name: b})
	}
	return &mcp.CallToolResult{Content: content, StructuredContent: out}, nil
}

// protocolTool is a Skills Protocol method offered as a tool.
type protocolTool struct {
	method string
	desc   string
	schema string
	run    bool // answers a run result
}

var protocolTools = []protocolTool{
	{method: dispatch.MethodListSkills, desc: "List the skills this gateway serves (names, or summaries with detail=summary), a page at a time.",
		schema: `{"type":"object","properties":{"namespace":{"type":"string","description":"only skills of this namespace (first dotted segment)"},` +
			`"detail":{"type":"string","enum":["names","summary"]},"limit":{"type":"integer","minimum":1},` +
			`"cursor":{"type":"string","description":"next_cursor of the previous page"}},"additionalProperties":false}`},
	{method: dispatch.MethodDescribeSkill, desc: "Describe one skill: its manifest, summary, or everything including SKILL.md and its file list (detail=full).",
		schema: `{"type":"object","properties":{"name":{"type":"string"},"version":{"type":"string"},` +
			`"detail":{"type":"string","enum":["manifest","summary","full"]}},"required":["name"],"additionalProperties":false}`},
	{method: dispatch.MethodReadSkillFile, desc: "Read a file of a skill package, a window at a time (text as UTF-8, binary as base64).",
		schema: `{"type":"object","properties":{"name":{"type":"string"},"version":{"type":"string"},"path":{"type":"string"},` +
			`"offset":{"type":"integer","minimum":0},"max_bytes":{"type":"integer","minimum":1}},"required":["name","path"],"additionalProperties":false}`},
	{method: dispatch.MethodRunCode, run: true,
		desc: "Run Python or bash code in a fresh sandbox. Python: the function named entrypoint (default main) is called with args. " +
			"bash: the script runs in /workspace and exit status 0 completes the run. mount_skills puts skills' files at /skills/<name>/ " +
			"(action skills are also importable as skills.<name>); input_blobs are files at /blobs/<id without blob:>.",
		schema: `{"type":"object","properties":{"language":{"type":"string","enum":["python","bash"]},"code":{"type":"string"},` +
			`"entrypoint":{"type":"string"},"args":{"type":"object"},"mount_skills":{"type":"array","items":{"type":"string"}},` +
			`"input_blobs":{"type":"array","items":{"type":"string"}},"timeout_ms":{"type":"integer","minimum":1}},` +
			`"required":["language","code"],"additionalProperties":false}`},
	{method: dispatch.MethodCreateBlob, desc: "Store content as a blob that runs can read (input_blobs) and that read_blob returns.",
		schema: `{"type":"object","properties":{"content":{"type":"string"},"kind":{"type":"string"},` +
			`"encoding":{"type":"string","enum":["utf-8","base64"]}},"required":["content"],"additionalProperties":false}`},
	{method: dispatch.MethodReadBlob, desc: "Read a blob: its head, tail or whole content, up to max_bytes; " +
		`a blob larger than one answer in pieces with mode "range" from offset (each answer's next_offset is the next piece's).`,
		schema: `{"type":"object","properties":{"blob_id":{"type":"string"},"mode":{"type":"string","enum":["sample_head","sample_tail","full","range"]},` +
			`"max_bytes":{"type":"integer","minimum":1},"offset":{"type":"integer","minimum":0}},"required":["blob_id"],"additionalProperties":false}`},
}

func (s *Server) addProtocolTools() {
	for _, pt := range protocolTools {
		s.mcp.AddTool(&mcp.Tool{Name: pt.method, Description: pt.desc, InputSchema: json.RawMessage(pt.schema)}, s.protocolHandler(pt))
	}
}

func (s *Server) protocolHandler(pt protocolTool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		params, notify := json.RawMessage(req.Params.Arguments), dispatch.Notifier(nil)
		if pt.run {
			params, notify = withStream(params), s.runNotifier(req)
		}
		res, err := s.invoke(ctx, req, pt.method, params, notify)
		if err != nil {
			return nil, err
		}
		if pt.run {
			return runResult(res)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(res)}}, StructuredContent: res}, nil
	}
}

// isProtocolTool reports the method behind a protocol tool's name.
func isProtocolTool(name string) bool {
	for _, pt := range protocolTools {
		if pt.method == name {
			return true
		}
	}
	return false
}
