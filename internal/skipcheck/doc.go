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
//	skipcheck -allowed .ci/allowed-skips -stage unit -- go test -race -json ./...
//
// or, for a test binary run by another command (.ci/test-rootless runs
// them as another user), its output converted by test2json on stdin:
//
//	pkg.test -test.v=test2json 2>&1 | go tool test2json -p PKG | skipcheck -allowed FILE -stage rootless -
//
// which exits 1 if the stream holds a failure.
//
// The allowed-skips file has one skip a line: the package (its import path
// without the gateway module's prefix), the test (a path.Match pattern, so
// that TestX/* covers the subtests), optionally the stages in which the
// skip is allowed (@name[,name...], matched against -stage; without it the
// skip is allowed in every stage) and, mandatory, the reason; # starts a
// comment.
//
//	sandbox  TestDelegatedCgroupV2  @unit,scratch  needs an unprivileged user: make test-rootless runs it as one
package main
