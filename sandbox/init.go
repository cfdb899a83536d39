package sandbox

import "os"

// MaybeInit must be called first thing in main() of every binary that uses
// this package (and in TestMain of its tests). The sandbox starts its pid 1
// by re-executing the current binary with a private verb; in that process
// MaybeInit runs the in-sandbox set-up and never returns. In every other
// process it returns at once.
func MaybeInit() {
	if len(os.Args) >= 2 && os.Args[1] == initVerb {
		runInit()
		os.Exit(1) // runInit does not return
	}
}
