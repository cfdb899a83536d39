//lint:file-ignore SA1019 MCP logging (notifications/message, logging/setLevel) is deprecated from protocol 2026-07-28 but still served to clients of earlier versions, which the issue requires.

package mcpfront

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/runs"
)

// Log levels of a run's output: what the code writes to stderr (where
// Python's logging and tracebacks go) is a warning, the rest information.
const (
	levelStdout mcp.LoggingLevel = "info"
	levelStderr mcp.LoggingLevel = "warning"
)

// runEvents turns the run_event notifications of a streamed run into MCP
// notifications for one tools/call: progress reports as
// notifications/progress when the call carried a progressToken, log lines
// as notifications/message, which the SDK sends only at or above the
// level the client set with logging/setLevel (none before it sets one).
type runEvents struct {
	token    any // the call's progressToken; nil: no progress wanted
	progress func(context.Context, *mcp.ProgressNotificationParams) error
	message  func(context.Context, *mcp.LoggingMessageParams) error
	log      zerolog.Logger

	what string  // the run's skill@version or run_code, as the logger name
	last float64 // the latest progress sent
	sent bool    // whether any progress was sent
}

// runEvent is the part of a run event's own members the MCP front door
// uses.
type runEvent struct {
	What     string   `json:"what"`
	Stream   string   `json:"stream"`
	Text     string   `json:"text"`
	Progress *float64 `json:"progress"`
	Total    *float64 `json:"total"`
	Message  *string  `json:"message"`
}

// notify is the call's dispatch.Notifier. Only the events that become MCP
// notifications are read. A notification the client cannot take is
// dropped rather than failing the run: only the end of the call's context
// ends the stream.
func (n *runEvents) notify(ctx context.Context, method string, params any) error {
	re, ok := params.(*dispatch.RunEvent)
	if method != dispatch.MethodRunEvent || !ok {
		return ctx.Err()
	}
	switch re.Type {
	case runs.EventStarted, runs.EventProgress, runs.EventLog:
	default:
		return ctx.Err()
	}
	var ev runEvent
	if err := json.Unmarshal(re.Data, &ev); err != nil {
		return ctx.Err()
	}
	var err error
	switch re.Type {
	case runs.EventStarted:
		n.what = ev.What
	case runs.EventProgress:
		err = n.sendProgress(ctx, &ev)
	case runs.EventLog:
		err = n.message(ctx, &mcp.LoggingMessageParams{Level: logLevel(ev.Stream), Logger: n.what, Data: ev.Text})
	}
	if err != nil && ctx.Err() == nil {
		n.log.Debug().Err(err).Str("event", re.Type).Msg("cannot notify the client of a run event")
	}
	return ctx.Err()
}

// sendProgress sends a progress report. The protocol wants the value to
// grow with every notification: a report that does not is skipped.
func (n *runEvents) sendProgress(ctx context.Context, ev *runEvent) error {
	if n.token == nil || ev.Progress == nil || (n.sent && *ev.Progress <= n.last) {
		return nil
	}
	n.last, n.sent = *ev.Progress, true
	p := &mcp.ProgressNotificationParams{ProgressToken: n.token, Progress: *ev.Progress}
	if ev.Total != nil {
		p.Total = *ev.Total
	}
	if ev.Message != nil {
		p.Message = *ev.Message
	}
	return n.progress(ctx, p)
}

func logLevel(stream string) mcp.LoggingLevel {
	if stream == "stderr" {
		return levelStderr
	}
	return levelStdout
}

// runNotifier is the Notifier of a run tool's call: it turns the run's
// events into the call's notifications, which the SDK's session sends
// (log messages only at or above the client's level). nil when the call
// would receive none of them: the run then goes unstreamed.
func (s *Server) runNotifier(req *mcp.CallToolRequest) dispatch.Notifier {
	ss := req.Session
	if ss == nil || !s.listening.wants(req) {
		return nil
	}
	n := &runEvents{token: req.Params.GetProgressToken(), progress: ss.NotifyProgress, message: ss.Log, log: s.opts.Logger}
	return n.notify
}

// withStream returns params (a JSON object) asking for a streamed run;
// anything else comes back as it is, for the method to refuse.
func withStream(params json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(params, &obj) != nil || obj == nil {
		return params
	}
	obj["stream"] = json.RawMessage("true")
	out, err := json.Marshal(obj)
	if err != nil {
		return params
	}
	return out
}
