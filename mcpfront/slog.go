package mcpfront

import (
	"context"
	"log/slog"

	"github.com/rs/zerolog"
)

// zerologHandler sends the SDK's slog records to the gateway's zerolog
// logger, so that they share its format, level and output.
type zerologHandler struct {
	log   zerolog.Logger
	attrs []slog.Attr
}

func (h zerologHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.GetLevel() <= zerologLevel(l)
}

func (h zerologHandler) Handle(_ context.Context, r slog.Record) error {
	ev := h.log.WithLevel(zerologLevel(r.Level))
	for _, a := range h.attrs {
		ev = ev.Any(a.Key, a.Value.Any())
	}
	r.Attrs(func(a slog.Attr) bool {
		ev = ev.Any(a.Key, a.Value.Any())
		return true
	})
	ev.Msg(r.Message)
	return nil
}

func (h zerologHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	h.attrs = append(append([]slog.Attr(nil), h.attrs...), attrs...)
	return h
}

// WithGroup flattens groups: the SDK's records are few and short.
func (h zerologHandler) WithGroup(string) slog.Handler { return h }

func zerologLevel(l slog.Level) zerolog.Level {
	switch {
	case l >= slog.LevelError:
		return zerolog.ErrorLevel
	case l >= slog.LevelWarn:
		return zerolog.WarnLevel
	case l >= slog.LevelInfo:
		return zerolog.InfoLevel
	}
	return zerolog.DebugLevel
}
