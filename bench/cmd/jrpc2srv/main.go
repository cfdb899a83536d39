// Command jrpc2srv serves the comparison methods with
// github.com/creachadair/jrpc2 behind the framed transport.
package main

import (
	"context"
	"flag"
	"net"

	"github.com/skillgate/skillgate/bench/internal/servecmd"
	"github.com/skillgate/skillgate/bench/jrpc2peer"
)

func main() {
	var concurrency int
	flags := func(fs *flag.FlagSet) {
		fs.IntVar(&concurrency, "concurrency", 0, "handlers running at once per connection (0: number of CPUs)")
	}
	servecmd.Main("jrpc2srv", flags, func(ctx context.Context, ln net.Listener) error {
		return jrpc2peer.Serve(ctx, ln, concurrency)
	})
}
