// Command mutrecheck re-checks the survivors of a go-gremlins run against
// today's tests, instead of a second full run of the package.
//
// It reads the JSON report `make mutation` wrote (.mutation/<pkg>.json),
// and for every mutant whose status is selected (LIVED by default; TIMED
// OUT and NOT COVERED on request) applies exactly the change gremlins
// v0.6.0 made (one token at the report's line and column swapped for
// another) to a copy of the file, then runs the package's tests against
// that copy through go test's -overlay, one mutant at a time unless -workers says more. A mutant
// whose token is no longer at its place is reported STALE: the source
// moved since the report was written.
//
// KILLED mutants, and the RUNNABLE ones of a dry run (`gremlins unleash
// --dry-run`), can be run too: every mutant judged for real, where
// gremlins' own timing cannot be trusted (tests slower than its timeout,
// or a mutant that does not build counted as killed). -test-pkg judges
// the mutants by another package's tests (code that runs only inside
// them, such as a sandbox's pid 1); -run keeps only some tests, which
// gives a lower bound of the score. -workers judges several mutants at
// once.
//
// The overlay reaches go through GOFLAGS, so that a test that builds a
// command itself builds the mutant too; other GOFLAGS stay, among them
// -exec (GOFLAGS=-exec=$PWD/.ci/test-cgroup2 judges mutants in the cgroup
// v2 VM).
//
// Usage, from the module root:
//
//	go run ./internal/mutrecheck -report .mutation/session.json -pkg ./session [-status LIVED,"TIMED OUT"] [-test-pkg ./other] [-run Pattern] [-workers 2] [-timeout 3m] [-o result.json]
//
// `make mutation-recheck PKG=./session` runs it on the report `make
// mutation` wrote for that package.
package main
