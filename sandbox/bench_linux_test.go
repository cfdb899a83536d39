package sandbox

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"
)

// Latency benchmarks: each reports p50/p99 (ms) of single operations.
// Compare them in one invocation, on a quiet machine:
//
//	go test -run '^$' -bench 'RunTrivial|RunCold|BarePython' -benchtime 200x ./sandbox/
//
// BenchmarkRunSustained reports throughput instead; BenchmarkRunBackToBack
// both, for one run in flight.

// BenchmarkRunTrivial measures a trivial run_code through the warm pool,
// from Run to Result. The pool is refilled outside the timed region, so
// this is the latency a request sees while the pool keeps up.
func BenchmarkRunTrivial(b *testing.B) {
	for _, ids := range benchIDMaps() {
		b.Run(string(ids), func(b *testing.B) { benchRunTrivial(b, ids) })
	}
}

func benchRunTrivial(b *testing.B, ids IDMap) {
	r := benchRunner(b, 2, ids)
	job := Job{RunID: "bench", Code: trivialCode}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		for r.Stats().WarmReady < r.cfg.WarmPool || r.Stats().Running > 0 {
			time.Sleep(time.Millisecond)
		}
		b.StartTimer()
		lat = append(lat, timedRun(b, r, job))
	}
	reportLatency(b, lat)
}

// BenchmarkRunCold measures a trivial run without the pool: the cost of
// starting a sandbox (namespaces, root, cgroups, Python) plus the run.
func BenchmarkRunCold(b *testing.B) {
	for _, ids := range benchIDMaps() {
		b.Run(string(ids), func(b *testing.B) { benchRunCold(b, ids) })
	}
}

func benchRunCold(b *testing.B, ids IDMap) {
	r := benchRunner(b, 0, ids)
	job := Job{RunID: "bench", Code: trivialCode}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		lat = append(lat, timedRun(b, r, job))
		b.StopTimer()
		for r.Stats().Running > 0 {
			time.Sleep(time.Millisecond)
		}
		b.StartTimer()
	}
	reportLatency(b, lat)
}

// BenchmarkRunColdPaced is BenchmarkRunCold after a pause before each
// run, as a call that comes after an agent's think time finds the host,
// alternated with bare interpreter starts after the same pause. After a
// pause, a start's cgroup move waits for a whole RCU grace period, long
// when other work keeps the CPUs busy (docs/operations.md): "ratio" is
// the run's p50 over the bare start's, both from this run.
func BenchmarkRunColdPaced(b *testing.B) {
	const pause = 50 * time.Millisecond
	r := benchRunner(b, 0, IDMapAuto)
	job := Job{RunID: "bench", Code: trivialCode}
	var runs, bare []time.Duration
	b.ReportAllocs()
	for range b.N {
		time.Sleep(pause)
		start := time.Now()
		res, err := r.Run(context.Background(), job)
		runs = append(runs, time.Since(start))
		if err != nil || res.Status != StatusCompleted {
			b.Fatalf("run: %v %+v", err, res)
		}
		time.Sleep(pause)
		start = time.Now()
		if err := exec.Command(defaultPython, "-c", "pass").Run(); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(start))
	}
	reportMedian(b, runs, "run") // sorts
	reportMedian(b, bare, "bare")
	b.ReportMetric(float64(runs[len(runs)/2])/float64(bare[len(bare)/2]), "ratio")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkRunSustained runs trivial jobs back to back from several
// goroutines: the pool cannot keep up, so this measures throughput
// (runs/s), bound by the cost of starting sandboxes.
func BenchmarkRunSustained(b *testing.B) {
	for _, ids := range benchIDMaps() {
		b.Run(string(ids), func(b *testing.B) { benchRunSustained(b, ids) })
	}
}

func benchRunSustained(b *testing.B, ids IDMap) {
	r := benchRunner(b, 2, ids)
	job := Job{RunID: "bench", Code: trivialCode}
	b.ReportAllocs()
	b.SetParallelism(2)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := r.Run(context.Background(), job)
			if err != nil || res.Status != StatusCompleted {
				b.Errorf("run: %v %+v", err, res)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
}

// BenchmarkRunBackToBack runs trivial jobs back to back from one
// goroutine with the gateway's default pool (two per worker): the pool
// drains and each run waits for the start under way. It reports the
// latency (p50/p99) and the rate; compare with BenchmarkBarePython in the
// same invocation.
func BenchmarkRunBackToBack(b *testing.B) {
	r := benchRunner(b, 4, IDMapAuto)
	job := Job{RunID: "bench", Code: trivialCode}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	begin := time.Now()
	for range b.N {
		lat = append(lat, timedRun(b, r, job))
	}
	b.ReportMetric(float64(b.N)/time.Since(begin).Seconds(), "runs/s")
	reportLatency(b, lat)
}

// timedRun runs job and returns how long Run took; a run that does not
// complete ends the benchmark.
func timedRun(b *testing.B, r *Runner, job Job) time.Duration {
	start := time.Now()
	res, err := r.Run(context.Background(), job)
	took := time.Since(start)
	if err != nil || res.Status != StatusCompleted {
		b.Fatalf("run: %v %+v", err, res)
	}
	return took
}

// BenchmarkBarePython is the yardstick: starting the bare interpreter.
func BenchmarkBarePython(b *testing.B) {
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	for range b.N {
		start := time.Now()
		if err := exec.Command(defaultPython, "-c", "pass").Run(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	reportLatency(b, lat)
}

// benchIDMaps are the id maps the run benchmarks compare: rootless with a
// subordinate range, that and the gateway's own uid; else what this
// process gets.
func benchIDMaps() []IDMap {
	if os.Geteuid() != 0 {
		if _, err := subordinateIDMapper(); err == nil {
			return []IDMap{IDMapSubordinate, IDMapOwn}
		}
	}
	return []IDMap{IDMapAuto}
}

func benchRunner(b *testing.B, pool int, ids IDMap) *Runner {
	cfg := testConfig()
	cfg.Workers, cfg.WarmPool, cfg.IDMap = 2, pool, ids
	r, err := New(cfg)
	requireSandbox(b, err)
	b.Cleanup(func() { _ = r.Close() })
	return r
}

func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op") // the percentiles are the result; ns/op mixes in the untimed refills
}

// BenchmarkRunLanguages puts a trivial bash run next to a trivial Python
// run through the same warm pool and next to a bare `bash -c true` spawn,
// interleaved so that all three see the same machine: p50 of each, and
// the ratios bash/python (what choosing bash costs a caller) and
// bash/bare (the sandbox's share of a bash run).
func BenchmarkRunLanguages(b *testing.B) {
	r := benchRunner(b, 2, IDMapAuto)
	python := Job{RunID: "bench-python", Code: trivialCode}
	bash := Job{RunID: "bench-bash", Code: "true", Language: LanguageBash}
	var py, sh, bare []time.Duration
	ready := func() {
		for r.Stats().WarmReady < r.cfg.WarmPool || r.Stats().Running > 0 {
			time.Sleep(time.Millisecond)
		}
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		ready()
		b.StartTimer()
		py = append(py, timedRun(b, r, python))
		b.StopTimer()
		ready()
		b.StartTimer()
		sh = append(sh, timedRun(b, r, bash))
		start := time.Now()
		if err := exec.Command("/bin/bash", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(start))
	}
	reportMedian(b, py, "python")
	reportMedian(b, sh, "bash")
	reportMedian(b, bare, "bare-bash")
	// reportMedian sorted each list: the middle element is the p50.
	median := func(d []time.Duration) float64 { return float64(d[len(d)/2]) }
	b.ReportMetric(median(sh)/median(py), "bash/python")
	b.ReportMetric(median(sh)/median(bare), "bash/bare")
}

// BenchmarkPreloadedImport puts a run whose code imports pandas, forked
// from a template of an environment that preloads it, next to a bare
// /usr/bin/python3 -c "import pandas" in the same run: latency at one in
// flight and throughput at two (the workers), and the template's memory.
func BenchmarkPreloadedImport(b *testing.B) {
	if err := exec.Command(defaultPython, "-c", "import pandas").Run(); err != nil {
		b.Skipf("pandas does not import here: %v", err)
	}
	cfg := testConfig()
	cfg.Workers, cfg.WarmPool = 2, 2
	cfg.Environment = Environment{Key: "pandas", Preload: []string{"pandas"}}
	r, err := New(cfg)
	requireSandbox(b, err)
	b.Cleanup(func() { _ = r.Close() })
	job := Job{RunID: "bench-pandas", Code: "import pandas\ndef main(args):\n    return {'v': pandas.__version__}\n",
		Environment: cfg.Environment}
	bare := func() {
		if err := exec.Command(defaultPython, "-c", "import pandas").Run(); err != nil {
			b.Fatal(err)
		}
	}
	ready := func() {
		for r.Stats().WarmReady < r.cfg.WarmPool || r.Stats().Running > 0 {
			time.Sleep(time.Millisecond)
		}
	}
	var runLat, bareLat []time.Duration
	var runTook, bareTook time.Duration
	const burst = 8 // per worker and iteration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		ready()
		b.StartTimer()
		runLat = append(runLat, timedRun(b, r, job))
		start := time.Now()
		bare()
		bareLat = append(bareLat, time.Since(start))
		b.StopTimer()
		ready()
		b.StartTimer()
		runTook += inParallel(2, burst, func() { timedRun(b, r, job) })
		bareTook += inParallel(2, burst, bare)
	}
	reportMedian(b, runLat, "preloaded")
	reportMedian(b, bareLat, "bare-import")
	median := func(d []time.Duration) float64 { return float64(d[len(d)/2]) }
	b.ReportMetric(median(runLat)/median(bareLat), "preloaded/bare")
	n := float64(2 * burst * b.N)
	b.ReportMetric(n/runTook.Seconds(), "runs/s")
	b.ReportMetric(n/bareTook.Seconds(), "bare-imports/s")
	b.ReportMetric(bareTook.Seconds()/runTook.Seconds(), "throughput-x-bare")
	b.ReportMetric(float64(r.Templates().Bytes)/(1<<20), "template-MiB")
}

// inParallel calls fn n times on each of workers goroutines and returns
// how long they took together.
func inParallel(workers, n int, fn func()) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range n {
				fn()
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}
