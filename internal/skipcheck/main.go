package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
)

// module is the prefix the allowed-skips file leaves out of package paths.
const module = "github.com/skillgate/skillgate/"

func main() {
	allowedFile := flag.String("allowed", ".ci/allowed-skips", "the file of allowed skips")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: skipcheck -allowed FILE -- go test -json ...")
		os.Exit(2)
	}
	allowed, err := readAllowed(*allowedFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "skipcheck:", err)
		os.Exit(2)
	}
	strict := os.Getenv("SKILLGATE_REQUIRE_NO_SKIPS") == "1"
	os.Exit(run(flag.Args(), allowed, strict, os.Stdout, os.Stderr))
}

// run runs the test command and returns the exit status: the command's,
// or 1 for an unlisted skip in strict mode.
func run(args []string, allowed []allowedSkip, strict bool, stdout, stderr io.Writer) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, "skipcheck:", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "skipcheck:", err)
		return 2
	}
	skips := filter(pipe, stdout)
	status := 0
	if err := cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			fmt.Fprintln(stderr, "skipcheck:", err)
			return 2
		}
		status = exit.ExitCode()
	}
	if bad := report(skips, allowed, stdout); bad > 0 && strict {
		fmt.Fprintf(stdout, "skipcheck: %d skip(s) not listed in the allowed skips, and SKILLGATE_REQUIRE_NO_SKIPS=1\n", bad)
		if status == 0 {
			status = 1
		}
	}
	return status
}

// report lists the skips, marks those not allowed and returns their
// number.
func report(skips []skip, allowed []allowedSkip, w io.Writer) int {
	if len(skips) == 0 {
		return 0
	}
	sort.Slice(skips, func(i, j int) bool {
		return skips[i].pkg+" "+skips[i].test < skips[j].pkg+" "+skips[j].test
	})
	fmt.Fprintf(w, "skipped tests (%d):\n", len(skips))
	bad := 0
	for _, s := range skips {
		mark := "allowed"
		if !isAllowed(s, allowed) {
			mark = "NOT ALLOWED"
			bad++
		}
		fmt.Fprintf(w, "  %-11s %s %s: %s\n", mark, s.pkg, s.test, s.reason)
	}
	return bad
}
