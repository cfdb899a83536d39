package mcpfront

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/skills"
	"github.com/skillgate/skillgate/transport"
)

// call runs a Skills Protocol method for an MCP request and answers the
// method's Go value, which the SDK encodes once, at the wire; notify, when
// not nil, receives the events of a streamed run.
func (s *Server) call(ctx context.Context, req mcp.Request, method string, params json.RawMessage, notify dispatch.Notifier) (any, error) {
	id := s.identity(req)
	if id == nil {
		return nil, rpcError(transport.AppError(dispatch.StringAuthRequired, "Authentication required.").
			WithDetails(ErrNoIdentity.Error()))
	}
	markReached(ctx)
	res, e := s.opts.Front.Call(ctx, &dispatch.Request{Method: method, Params: params, Identity: id, Remote: "mcp", Notify: notify})
	if e != nil {
		return nil, rpcError(e)
	}
	return res, nil
}

// callFor is call for a method whose result is a *T.
func callFor[T any](ctx context.Context, s *Server, req mcp.Request, method string, params json.RawMessage, notify dispatch.Notifier) (*T, error) {
	res, err := s.call(ctx, req, method, params, notify)
	if err != nil {
		return nil, err
	}
	return resultAs[T](res)
}

// resultAs is a method's result as a *T: the value itself, or, should the
// method have answered another type that encodes to the same object, that
// object decoded.
func resultAs[T any](res any) (*T, error) {
	if v, ok := res.(*T); ok {
		return v, nil
	}
	obj, err := transport.MarshalObject(res)
	if err != nil {
		return nil, err
	}
	v := new(T)
	if err := json.Unmarshal(obj, v); err != nil {
		return nil, err
	}
	return v, nil
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
		notify := s.runNotifier(req)
		params := runParams(name, args, blobArgs(args), notify != nil)
		r, err := callFor[dispatch.RunResult](ctx, s, req, dispatch.MethodExecuteSkill, params, notify)
		if err != nil {
			return nil, err
		}
		return runResult(r), nil
	}
}

// runParams are execute_skill's params of a skill tool's call: the tool's
// arguments (a JSON value the SDK has read) as the run's args, streamed
// when someone listens.
func runParams(name string, args json.RawMessage, blobs []string, stream bool) json.RawMessage {
	b := make([]byte, 0, len(args)+len(name)+64)
	b = append(b, `{"name":`...)
	b = transport.AppendString(b, name)
	b = append(b, `,"args":`...)
	b = append(b, args...)
	if stream {
		b = append(b, `,"stream":true`...)
	}
	if len(blobs) > 0 {
		b = append(b, `,"input_blobs":[`...)
		for i, id := range blobs {
			if i > 0 {
				b = append(b, ',')
			}
			b = transport.AppendString(b, id)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// blobArgs finds the blob ids among a run's top-level arguments (a string
// or a list of strings starting "blob:"): an MCP client cannot name
// input_blobs beside a tool's arguments, so a blob passed as an argument
// is made readable to the run. Ownership is checked as for input_blobs.
func blobArgs(args json.RawMessage) []string {
	if !bytes.Contains(args, []byte(`"blob:`)) {
		return nil
	}
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
func runResult(r *dispatch.RunResult) *mcp.CallToolResult {
	a := new(toolAnswer)
	if r.Error != nil || r.Status != "completed" {
		text := r.Summary
		if r.Error != nil {
			text = r.Error.Type + ": " + r.Summary
		}
		// No structuredContent: it would have to match the tool's
		// output schema, which describes a completed run's output.
		a.res.IsError = true
		return a.answer(withLogs(text, r.LogsPreview), nil)
	}
	out := r.Output
	if len(out) == 0 {
		out = json.RawMessage(`{}`)
	}
	res := a.answer(withLogs(string(out), r.LogsPreview), r.OutputBlobs)
	res.StructuredContent = out
	return res
}

// toolAnswer is a run's tool result with its parts, allocated at once.
type toolAnswer struct {
	res     mcp.CallToolResult
	text    mcp.TextContent
	content [1]mcp.Content
}

// answer fills in the text and one resource link per output blob.
func (a *toolAnswer) answer(text string, blobs []string) *mcp.CallToolResult {
	a.text.Text = text
	a.content[0] = &a.text
	a.res.Content = a.content[:]
	for _, b := range blobs {
		a.res.Content = append(a.res.Content, &mcp.ResourceLink{URI: blobURI(b), Name: b})
	}
	return &a.res
}

// withLogs is a run's text with its logs preview, when it has one.
func withLogs(text, logs string) string {
	if logs == "" {
		return text
	}
	return text + "\n\nlogs:\n" + logs
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
			if notify = s.runNotifier(req); notify != nil {
				params = withStream(params)
			}
		}
		if pt.run {
			r, err := callFor[dispatch.RunResult](ctx, s, req, pt.method, params, notify)
			if err != nil {
				return nil, err
			}
			return runResult(r), nil
		}
		res, err := s.call(ctx, req, pt.method, params, nil)
		if err != nil {
			return nil, err
		}
		obj, err := transport.MarshalObject(res)
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(obj)}}, StructuredContent: json.RawMessage(obj)}, nil
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
