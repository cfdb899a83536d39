package mcpfront

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each slog level maps onto zerolog's at, just below and just above the
// boundaries, so that the SDK's records keep their severity in the log.
func TestZerologLevelBoundaries(t *testing.T) {
	for l, want := range map[slog.Level]zerolog.Level{
		slog.LevelError + 1: zerolog.ErrorLevel,
		slog.LevelError:     zerolog.ErrorLevel,
		slog.LevelError - 1: zerolog.WarnLevel,
		slog.LevelWarn:      zerolog.WarnLevel,
		slog.LevelWarn - 1:  zerolog.InfoLevel,
		slog.LevelInfo:      zerolog.InfoLevel,
		slog.LevelInfo - 1:  zerolog.DebugLevel,
		slog.LevelDebug:     zerolog.DebugLevel,
	} {
		assert.Equal(t, want, zerologLevel(l), "slog level %d", l)
	}
}

// A record reaches the gateway's log with its level, message and
// attributes, the handler's own attributes first; a level below the
// logger's is not enabled.
func TestZerologHandlerWritesRecords(t *testing.T) {
	var buf bytes.Buffer
	h := slog.New(zerologHandler{log: zerolog.New(&buf).Level(zerolog.WarnLevel)}).With("session", "s1")
	assert.False(t, h.Enabled(context.Background(), slog.LevelInfo))
	assert.True(t, h.Enabled(context.Background(), slog.LevelWarn))
	h.WithGroup("g").Warn("dropped stream", "n", 2)
	var got map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &got))
	assert.Equal(t, map[string]any{"level": "warn", "message": "dropped stream", "session": "s1", "n": float64(2)}, got)
}

// A failed run is an isError result naming the error type, with the
// summary and the logs preview; a completed one carries its output.
func TestRunResultShapes(t *testing.T) {
	res, err := decodedRunResult(json.RawMessage(`{"status":"failed","summary":"bad input","logs_preview":"trace",` +
		`"error":{"type":"ValueError","message":"bad input"}}`))
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Nil(t, res.StructuredContent)
	assert.Equal(t, "ValueError: bad input\n\nlogs:\ntrace", res.Content[0].(*mcp.TextContent).Text)

	res, err = decodedRunResult(json.RawMessage(`{"status":"completed","output":{"sum":3},"output_blobs":["blob:ab"]}`))
	require.NoError(t, err)
	assert.False(t, res.IsError)
	assert.Equal(t, `{"sum":3}`, res.Content[0].(*mcp.TextContent).Text)
	assert.Equal(t, "blob://ab", res.Content[1].(*mcp.ResourceLink).URI)
}
