package main

import (
	"fmt"
	"io"
	stdlog "log"
	"os"
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
		out = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000", NoColor: !colour(w)}
	}
	return zerolog.New(out).Level(lvl).With().Timestamp().Logger(), nil
}

// colour reports whether console logs written to w may carry colour
// codes: only on a terminal, where they are read, never in a file or a
// pipe that keeps them as escape codes; and not when NO_COLOR is set
// (no-color.org).
func colour(w io.Writer) bool {
	return os.Getenv("NO_COLOR") == "" && isTerminal(w)
}

// httpErrorLog routes net/http's own error messages (TLS handshake noise,
// malformed requests) into the structured log.
func httpErrorLog(log zerolog.Logger) *stdlog.Logger {
	return stdlog.New(log.With().Str("component", "http").Logger(), "", 0)
}
