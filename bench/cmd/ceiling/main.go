// Command ceiling runs the ceiling server of the comparison: framing plus
// encoding/json and nothing more. See package ceiling.
package main

import (
	"context"
	"net"

	"github.com/skillgate/skillgate/bench/ceiling"
	"github.com/skillgate/skillgate/bench/internal/servecmd"
)

func main() {
	servecmd.Main("ceiling", nil, func(_ context.Context, ln net.Listener) error {
		return ceiling.Serve(ln)
	})
}
