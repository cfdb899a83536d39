package sandbox

import (
	"os"

	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// MaybeInit must be called first thing in main() of every binary that uses
// this package (and in TestMain of its tests). A sandbox started from
// scratch gets its pid 1 by re-executing the current binary with a private
// verb; in that process MaybeInit runs the in-sandbox set-up and never
// returns. In every other process it returns at once. (A sandbox forked
// from the template gets its pid 1 from the template, a Python process:
// this binary is not involved.)
func MaybeInit() {
	if len(os.Args) >= 2 && os.Args[1] == wire.InitVerb {
		runInit()
		os.Exit(1) // runInit does not return
	}
}
