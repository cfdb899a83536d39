// Package servecmd is the shared main of the comparison server binaries:
// it parses -listen, listens, prints "listening ADDR" on stdout once the
// listener is open (so that a runner given port 0 learns the address) and
// stops on SIGTERM or SIGINT.
package servecmd

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
)

// ServeFunc serves connections on ln until ln is closed or ctx ends.
type ServeFunc func(ctx context.Context, ln net.Listener) error

// Main runs a comparison server named name and exits. extra, when not nil,
// registers more flags before parsing.
func Main(name string, extra func(fs *flag.FlagSet), serve ServeFunc) {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	addr := fs.String("listen", "127.0.0.1:0", "address to listen on (loopback)")
	if extra != nil {
		extra(fs)
	}
	_ = fs.Parse(os.Args[1:])
	if err := run(*addr, serve); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

func run(addr string, serve ServeFunc) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	context.AfterFunc(ctx, func() { _ = ln.Close() })
	fmt.Printf("listening %s\n", ln.Addr())
	return serve(ctx, ln)
}
