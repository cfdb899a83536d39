// Command sgsrv serves the comparison methods with
// github.com/sourcegraph/jsonrpc2 behind the framed transport.
package main

import (
	"context"
	"flag"
	"net"

	"github.com/skillgate/skillgate/bench/internal/servecmd"
	"github.com/skillgate/skillgate/bench/sgpeer"
)

func main() {
	var async bool
	flags := func(fs *flag.FlagSet) {
		fs.BoolVar(&async, "async", false, "wrap the handler in jsonrpc2.AsyncHandler (a goroutine per request)")
	}
	servecmd.Main("sgsrv", flags, func(ctx context.Context, ln net.Listener) error {
		return sgpeer.Serve(ctx, ln, async)
	})
}
