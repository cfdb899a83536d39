package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/rs/zerolog"
)

const usage = `usage: skillgate-bench COMMAND [flags]

commands:
  load      drive a framed server: N connections, D requests in flight each
  idle      hold N idle initialized connections, report the server's RSS per connection
  compare   gateway vs ceiling vs jrpc2 vs sourcegraph, alternated; one table of ratios
  sandbox   sustained trivial run_code at 1 and 4 in flight and cold starts, against a bare python3 spawn loop
  preload   a run importing a module its base environment preloads (pandas) against a bare python3 -c "import pandas"
  flood     start a gateway, flood it with clients that never read, and with clients that leave MCP sessions
            and unfinished uploads behind; report its RSS against the configured bounds
  soak      start a gateway and drive framed, HTTP and MCP clients at a steady mixed load for --duration;
            a table of its RSS, goroutines, open fds and data dir over time, and whether each stays flat

Run "skillgate-bench COMMAND -h" for the flags of a command.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, errUsage) {
			fmt.Fprintln(os.Stderr, "skillgate-bench:", err)
		}
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	level := zerolog.InfoLevel
	if os.Getenv("SKILLGATE_BENCH_DEBUG") != "" {
		level = zerolog.DebugLevel
	}
	log := zerolog.New(zerolog.ConsoleWriter{Out: stderr, TimeFormat: "15:04:05"}).Level(level).With().Timestamp().Logger()
	switch args[0] {
	case "load":
		return cmdLoad(ctx, args[1:], stdout, log)
	case "idle":
		return cmdIdle(ctx, args[1:], stdout, log)
	case "compare":
		return cmdCompare(ctx, args[1:], stdout, log)
	case "sandbox":
		return cmdSandbox(ctx, args[1:], stdout, log)
	case "preload":
		return cmdPreload(ctx, args[1:], stdout, log)
	case "flood":
		return cmdFlood(ctx, args[1:], stdout, log)
	case "soak":
		return cmdSoak(ctx, args[1:], stdout, log)
	case "idle-hold":
		return cmdIdleHold(ctx, args[1:], stdin, stdout)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
}
