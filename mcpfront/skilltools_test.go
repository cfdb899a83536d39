//lint:file-ignore SA1019 MCP logging (notifications/message) is deprecated from protocol 2026-07-28 but still served to clients of earlier versions, which the issue requires.

package mcpfront

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A skill's tool is described by its description, followed by its
// SKILL.md short description when that says something else; its input
// and output schemas are the skill's own, an open object without one.
func TestSkillToolShape(t *testing.T) {
	dir := t.TempDir()
	skillFiles(t, dir, "one", actionSkill("acme.one.run", "1.0.0", "One.", "One, in short.", ""))
	skillFiles(t, dir, "same", actionSkill("acme.same.run", "1.0.0", "Same.", "Same.", ""))
	typed := actionSkill("acme.typed.run", "1.0.0", "Typed.", "Typed.", "args_schema = \"schema/args.json\"\noutput_schema = \"schema/out.json\"\n")
	typed["schema/args.json"] = `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`
	typed["schema/out.json"] = `{"type":"object","properties":{"sum":{"type":"integer"}}}`
	skillFiles(t, dir, "typed", typed)
	g := newGateway(t, gatewayOptions{skillsDir: dir, mcp: Options{Tools: ToolsSkills}})
	tools := toolsByName(t, g.client(t, "", nil))

	assert.Equal(t, "One.\n\nOne, in short.", tools["acme.one.run"].Description)
	assert.Equal(t, "T", tools["acme.one.run"].Title)
	assert.Equal(t, "Same.", tools["acme.same.run"].Description, "a short description that repeats is not added")
	assert.Equal(t, map[string]any{"type": "object"}, tools["acme.one.run"].InputSchema)
	assert.Nil(t, tools["acme.one.run"].OutputSchema)
	assert.Equal(t, map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}},
		"required": []any{"n"}}, tools["acme.typed.run"].InputSchema)
	assert.Equal(t, map[string]any{"type": "object", "properties": map[string]any{"sum": map[string]any{"type": "integer"}}},
		tools["acme.typed.run"].OutputSchema)
}

// runOutput is the structured output of a completed tools/call.
func runOutput(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	require.False(t, res.IsError, textOf(res))
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(textOf(res)), &out))
	return out
}

// A skill tool's arguments are the run's args (none is an empty object),
// and the blob ids among the top-level arguments are handed to the run
// as input blobs, sorted and once each.
func TestSkillToolArgsAndBlobs(t *testing.T) {
	dir := t.TempDir()
	skillFiles(t, dir, "echo", actionSkill("acme.echo.run", "1.0.0", "Echo.", "Echo.", ""))
	g := newGateway(t, gatewayOptions{skillsDir: dir, runner: echoRunner{}})
	cs := g.client(t, "", nil)
	call := func(args any) (*mcp.CallToolResult, error) {
		return cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "acme.echo.run", Arguments: args})
	}

	res, err := call(map[string]any{"n": 1, "s": "x"})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"args": map[string]any{"n": float64(1), "s": "x"}, "blobs": []any{}}, runOutput(t, res))

	res, err = call(nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"args": map[string]any{}, "blobs": []any{}}, runOutput(t, res), "no arguments: {}")

	res, err = call(json.RawMessage(`null`))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"args": map[string]any{}, "blobs": []any{}}, runOutput(t, res), "null arguments: {}")

	b1 := createBlob(t, cs, map[string]any{"content": "one"})
	b2 := createBlob(t, cs, map[string]any{"content": "two"})
	res, err = call(map[string]any{"file": b2, "files": []any{b1, b2}, "note": "not a blob:id"})
	require.NoError(t, err)
	first, second := min(b1, b2), max(b1, b2)
	out := runOutput(t, res)
	assert.Equal(t, []any{first, second}, out["blobs"])

	// A blob id that names no blob of the caller fails the call as
	// execute_skill's input_blobs does.
	_, err = call(map[string]any{"file": "blob:" + "00000000000000000000000000000000"})
	e := rpcErr(t, err)
	assert.Contains(t, string(e.Data), "BLOB_NOT_FOUND")
}

// The result of a run as a tools/call answer: failures are isError with
// the summary (and the error type when there is one), completed runs
// their output, an empty output as {}, the logs preview after it.
func TestRunResultMoreShapes(t *testing.T) {
	res, err := decodedRunResult(json.RawMessage(`{"status":"failed","summary":"the run timed out"}`))
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Equal(t, "the run timed out", textOf(res), "no error object, no logs: the summary alone")

	res, err = decodedRunResult(json.RawMessage(`{"status":"completed","output":{"a":1},"logs_preview":"hello\n"}`))
	require.NoError(t, err)
	assert.False(t, res.IsError)
	assert.Equal(t, "{\"a\":1}\n\nlogs:\nhello\n", textOf(res))
	assert.JSONEq(t, `{"a":1}`, string(res.StructuredContent.(json.RawMessage)))
	require.Len(t, res.Content, 1, "no output blobs, no links")

	res, err = decodedRunResult(json.RawMessage(`{"status":"completed"}`))
	require.NoError(t, err)
	assert.False(t, res.IsError)
	assert.Equal(t, "{}", textOf(res))
	assert.Equal(t, json.RawMessage(`{}`), res.StructuredContent)

	res, err = decodedRunResult(json.RawMessage(`{"status":"canceled","summary":"canceled by the client"}`))
	require.NoError(t, err)
	assert.True(t, res.IsError, "only a completed run is a success")
}

// A run event the client cannot take is logged at debug level and
// dropped; a delivered one is not logged, nor one that fails because the
// call itself ended.
func TestRunEventDeliveryFailureLogged(t *testing.T) {
	var buf bytes.Buffer
	fail := errors.New("client gone")
	var deliver error
	n := &runEvents{token: "t", log: zerolog.New(&buf).Level(zerolog.DebugLevel),
		progress: func(context.Context, *mcp.ProgressNotificationParams) error { return deliver },
		message:  func(context.Context, *mcp.LoggingMessageParams) error { return deliver },
	}
	ctx := t.Context()
	require.NoError(t, n.notify(ctx, "run_event", eventOf(`{"type":"progress","progress":1}`)))
	assert.Empty(t, buf.String(), "delivered: nothing to log")

	deliver = fail
	require.NoError(t, n.notify(ctx, "run_event", eventOf(`{"type":"log","stream":"stdout","text":"x"}`)))
	require.NoError(t, n.notify(ctx, "run_event", eventOf(`{"type":"progress","progress":2}`)))
	logs := logLines(t, &buf)
	require.Len(t, logs, 2)
	assert.Equal(t, map[string]any{"level": "debug", "error": "client gone", "event": "log",
		"message": "cannot notify the client of a run event"}, logs[0])
	assert.Equal(t, "progress", logs[1]["event"])

	buf.Reset()
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, n.notify(canceled, "run_event", eventOf(`{"type":"log","text":"y"}`)), context.Canceled)
	assert.Empty(t, buf.String(), "the call ended: not worth a log line")
}

// A tools/call without a session (a handler invoked outside the SDK's
// sessions) streams to nobody.
func TestRunNotifierWithoutSession(t *testing.T) {
	s := &Server{}
	assert.Nil(t, s.runNotifier(&mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{}}))
}
