package sandbox

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// BenchmarkStartTimeline breaks one sandbox start into phases (medians,
// ms), then the first job and the teardown; "interp" is a bare
// `python3 -I -B -c pass` measured in between, to split the Python phase
// into the interpreter's start and the runtime's imports; "warm-MiB" is
// one warm sandbox's memory (sum of PSS). SKILLGATE_SANDBOX_TEMPLATE=on|off
// picks the start path:
//
//	go test -run '^$' -bench StartTimeline -benchtime 50x ./sandbox/
func BenchmarkStartTimeline(b *testing.B) {
	r := benchRunner(b, 0, IDMapAuto)
	job := Job{RunID: "bench", Code: trivialCode}
	var phases [numPhases][]time.Duration
	var jobs, teardowns, interp []time.Duration
	for range b.N {
		sb, err := r.spawn(false, Environment{})
		if err != nil {
			b.Fatal(err)
		}
		for ph := phasePrepared; ph < numPhases; ph++ {
			if d := sb.timeline.since(ph); d > 0 {
				phases[ph] = append(phases[ph], d)
			}
		}
		p, err := newPlan(r.cfg, job)
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		res, err := sb.run(context.Background(), r.closing, p, &r.cfg)
		jobs = append(jobs, time.Since(t0))
		if err != nil || res.Status != StatusCompleted {
			b.Fatalf("run: %v %+v", err, res)
		}
		t0 = time.Now()
		r.teardown(sb)
		teardowns = append(teardowns, time.Since(t0))
		t0 = time.Now()
		if err := exec.Command(r.cfg.Python, "-I", "-B", "-c", "pass").Run(); err != nil {
			b.Fatal(err)
		}
		interp = append(interp, time.Since(t0))
	}
	for ph := phasePrepared; ph < numPhases; ph++ {
		reportMedian(b, phases[ph], phaseNames[ph])
	}
	reportMedian(b, jobs, "job")
	reportMedian(b, teardowns, "teardown")
	reportMedian(b, interp, "interp")
	b.ReportMetric(float64(r.WarmSandboxBytes())/(1<<20), "warm-MiB")
	b.ReportMetric(0, "ns/op")
}

func reportMedian(b *testing.B, d []time.Duration, name string) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2])/float64(time.Millisecond), name+"-ms")
}
