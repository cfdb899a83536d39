package scaleouttest

import (
	"runtime"
	"testing"
)

// recorder notes whether a lookup skipped or failed; both end the caller's
// goroutine as the real ones do.
type recorder struct {
	testing.TB
	skipped, failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Skip(...any)           { r.skipped = true; runtime.Goexit() }
func (r *recorder) Fatalf(string, ...any) { r.failed = true; runtime.Goexit() }

func lookup(r *recorder) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		Binary(r, "SKILLGATE_TEST_NO_SUCH_BINARY", "skillgate-no-such-binary")
	}()
	<-done
}

func TestMissingBinarySkipsOrFails(t *testing.T) {
	t.Setenv("SKILLGATE_REQUIRE_SCALEOUT", "")
	r := &recorder{TB: t}
	lookup(r)
	if !r.skipped || r.failed {
		t.Errorf("without SKILLGATE_REQUIRE_SCALEOUT a missing binary skips: %+v", r)
	}
	t.Setenv("SKILLGATE_REQUIRE_SCALEOUT", "1")
	r = &recorder{TB: t}
	lookup(r)
	if !r.failed || r.skipped {
		t.Errorf("with SKILLGATE_REQUIRE_SCALEOUT=1 a missing binary fails: %+v", r)
	}
	t.Setenv("SKILLGATE_TEST_NO_SUCH_BINARY", "/nonexistent/minio")
	r = &recorder{TB: t}
	lookup(r)
	if !r.failed {
		t.Errorf("a variable naming a missing file fails under SKILLGATE_REQUIRE_SCALEOUT=1")
	}
}
