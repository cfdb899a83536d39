package mcpfront

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/runs"
)

// decodedRunResult is runResult of a run object written as JSON.
func decodedRunResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	var r dispatch.RunResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	return runResult(&r), nil
}

// eventOf is the run event a run_event notification's params (JSON with a
// type) stand for; invalid JSON gives an event of no type.
func eventOf(params string) *dispatch.RunEvent {
	var members map[string]json.RawMessage
	_ = json.Unmarshal([]byte(params), &members)
	var typ string
	_ = json.Unmarshal(members["type"], &typ)
	delete(members, "type")
	data, _ := json.Marshal(members)
	return &dispatch.RunEvent{Event: runs.Event{Type: typ, Data: data}}
}
