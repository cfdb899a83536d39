// Command skipcheck runs `go test -json` and makes its skips visible: it
// prints what plain `go test` would (a package's summary line, the skips
// with their reasons, and a failing test's whole output), then lists
// every test that skipped. With SKILLGATE_REQUIRE_NO_SKIPS=1 (CI sets it)
// a skip that the allowed-skips file does not list fails the run, so that
// a test that quietly stopped running (a tool missing on the machine, an
// environment variable unset) is seen instead of passing for a success.
//
// Usage, from a module root:
//
//	skipcheck -allowed .ci/allowed-skips -- go test -race -json ./...
//
// The allowed-skips file has one skip a line: the package (its import path
// without the gateway module's prefix), the test (a path.Match pattern, so
// that TestX/* covers the subtests) and, mandatory, the reason; # starts a
// comment.
//
//	sandbox  TestDelegatedCgroupV2  runs in make test-rootless, which delegates a cgroup
package main
