// Command skillgate is the skillgate gateway. `skillgate serve` runs it,
// `skillgate call` calls one method over the framed transport, and
// `skillgate version` prints the build.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/skillgate/skillgate/sandbox"
)

func main() {
	// A sandbox's pid 1 is this binary re-executed: it must take over before
	// anything else runs.
	sandbox.MaybeInit()
	cmd := newRootCommand()
	if err := cmd.Execute(); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		fmt.Fprintln(os.Stderr, "skillgate:", err)
		os.Exit(2)
	}
}

// exitError ends the process with a specific status after its message has
// been printed.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }
