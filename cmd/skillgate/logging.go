package main

import (
	"fmt"
	"io"
	stdlog "log"
	"time"

	"github.com/rs/zerolog"
)

// newLogger builds the process's root logger; every other logger derives
// from it.
func newLogger(w io.Writer, level, format string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		return zerolog.Nop(), fmt.Errorf("--log-level must be debug, info, warn or error, not %q", level)
	}
	zerolog.TimeFieldFormat = time.RFC3339Nano
	out := w
	if format == "console" {
		out = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000"}
	}
	return zerolog.New(out).Level(lvl).With().Timestamp().Logger(), nil
}

// httpErrorLog routes net/http's own error messages (TLS handshake noise,
// malformed requests) into the structured log.
func httpErrorLog(log zerolog.Logger) *stdlog.Logger {
	return stdlog.New(log.With().Str("component", "http").Logger(), "", 0)
}
