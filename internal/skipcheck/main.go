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
	stage := flag.String("stage", "", "the test stage (unit, scratch, rootless, ...): entries scoped to other stages do not apply")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: skipcheck -allowed FILE [-stage NAME] -- go test -json ...")
		fmt.Fprintln(os.Stderr, "       ... | go tool test2json -p PKG | skipcheck -allowed FILE [-stage NAME] -")
		os.Exit(2)
	}
	allowed, err := readAllowed(*allowedFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "skipcheck:", err)
		os.Exit(2)
	}
	strict := os.Getenv("SKILLGATE_REQUIRE_NO_SKIPS") == "1"
	c := check{allowed: allowed, stage: *stage, strict: strict}
	if flag.NArg() == 1 && flag.Arg(0) == "-" {
		os.Exit(c.stream(os.Stdin, os.Stdout))
	}
	os.Exit(c.run(flag.Args(), os.Stdout, os.Stderr))
}

// check is what a run is judged against.
type check struct {
	allowed []allowedSkip
	stage   string // skipcheck -stage
	strict  bool   // SKILLGATE_REQUIRE_NO_SKIPS=1
}

// stream judges events read from r (test2json's output of a test binary
// run by someone else, as .ci/test-rootless does for another user): 1 if
// a test or package failed, or for an unlisted skip in strict mode.
func (c check) stream(r io.Reader, stdout io.Writer) int {
	skips, failed := filter(r, stdout)
	status := 0
	if failed {
		status = 1
	}
	return c.judge(skips, status, stdout)
}

// run runs the test command and returns the exit status: the command's,
// or 1 for an unlisted skip in strict mode.
func (c check) run(args []string, stdout, stderr io.Writer) int {
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
	skips, _ := filter(pipe, stdout)
	status := 0
	if err := cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			fmt.Fprintln(stderr, "skipcheck:", err)
			return 2
		}
		status = exit.ExitCode()
	}
	return c.judge(skips, status, stdout)
}

// judge lists the skips and returns status, or 1 instead of 0 for an
// unlisted skip in strict mode.
func (c check) judge(skips []skip, status int, stdout io.Writer) int {
	if bad := report(skips, c.allowed, c.stage, stdout); bad > 0 && c.strict {
		fmt.Fprintf(stdout, "skipcheck: %d skip(s) not listed in the allowed skips, and SKILLGATE_REQUIRE_NO_SKIPS=1\n", bad)
		if status == 0 {
			status = 1
		}
	}
	return status
}

// report lists the skips, marks those not allowed and returns their
// number.
func report(skips []skip, allowed []allowedSkip, stage string, w io.Writer) int {
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
		if !isAllowed(s, allowed, stage) {
			mark = "NOT ALLOWED"
			bad++
		}
		fmt.Fprintf(w, "  %-11s %s %s: %s\n", mark, s.pkg, s.test, s.reason)
	}
	return bad
}
