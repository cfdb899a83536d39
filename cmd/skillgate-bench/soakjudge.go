package main

import (
	"fmt"
	"io"
	"time"
)

// soakVerdict says whether one series stayed flat once warmed up: the
// least-squares line through its samples after the warm-up may not rise,
// over that window, by more than the series' tolerance.
type soakVerdict struct {
	Name        string
	Mean        float64 // over the judged samples
	Growth      float64 // the line's rise over the judged window
	PerHour     float64 // the line's slope, per hour
	Tolerance   float64
	Samples     int // judged
	Flat        bool
	Unit        string
	fromSeconds float64
}

// soakSeries are the series judged, with their tolerances: an absolute
// floor (noise of a small number) and a share of the mean. The data dir
// gets a wide share: blobs and run records expire in steps.
var soakSeries = []struct {
	name, unit string
	get        func(soakSample) int64
	floor, rel float64
}{
	{"RSS", "MiB", func(s soakSample) int64 { return s.RSS }, 4 << 20, 0.10},
	{"goroutines", "", func(s soakSample) int64 { return s.Goroutines }, 10, 0.10},
	{"open fds", "", func(s soakSample) int64 { return s.FDs }, 8, 0.10},
	{"data dir", "MiB", func(s soakSample) int64 { return s.DataBytes }, 4 << 20, 0.25},
}

// soakWarmup is when judging begins: after twice the retention (the data
// dir's content turns over) and a quarter of the run, but at the latest
// half way.
func soakWarmup(cfg soakConfig) time.Duration {
	return min(max(cfg.Duration/4, 2*cfg.Retention), cfg.Duration/2)
}

// judgeSoak fits each series after the warm-up. Fewer than three samples
// there judge nothing: every verdict is then not flat.
func judgeSoak(samples []soakSample, cfg soakConfig) []soakVerdict {
	warm := soakWarmup(cfg)
	var judged []soakSample
	for _, s := range samples {
		if s.At >= warm {
			judged = append(judged, s)
		}
	}
	out := make([]soakVerdict, 0, len(soakSeries))
	for _, ser := range soakSeries {
		v := soakVerdict{Name: ser.name, Unit: ser.unit, Samples: len(judged), fromSeconds: warm.Seconds()}
		if len(judged) >= 3 {
			xs := make([]float64, len(judged))
			ys := make([]float64, len(judged))
			for i, s := range judged {
				xs[i], ys[i] = s.At.Seconds(), float64(ser.get(s))
			}
			slope, mean := fitLine(xs, ys)
			v.Mean, v.PerHour = mean, slope*3600
			v.Growth = slope * (xs[len(xs)-1] - xs[0])
			v.Tolerance = max(ser.floor, ser.rel*mean)
			v.Flat = v.Growth <= v.Tolerance
		}
		out = append(out, v)
	}
	return out
}

// fitLine returns the least-squares slope of ys over xs and ys' mean.
func fitLine(xs, ys []float64) (slope, mean float64) {
	n := float64(len(xs))
	var sx, sy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
	}
	mx, my := sx/n, sy/n
	var num, den float64
	for i := range xs {
		num += (xs[i] - mx) * (ys[i] - my)
		den += (xs[i] - mx) * (xs[i] - mx)
	}
	if den == 0 {
		return 0, my
	}
	return num / den, my
}

func writeSoakTable(w io.Writer, cfg soakConfig, samples []soakSample) {
	fmt.Fprintf(w, "soak: %s of framed, HTTP and MCP clients (runs, blobs, uploads, MCP sessions), %d sandbox workers, blobs and runs kept %s\n\n",
		cfg.Duration, cfg.Workers, cfg.Retention)
	fmt.Fprintln(w, "| at | RSS | goroutines | open fds | data dir | operations | errors |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range samples {
		fmt.Fprintf(w, "| %s | %s | %d | %d | %s | %d | %d |\n", s.At, fmtMiB(s.RSS), s.Goroutines, s.FDs, fmtMiB(s.DataBytes), s.Ops, s.Errs)
	}
	fmt.Fprintln(w)
}

func writeSoakVerdicts(w io.Writer, vs []soakVerdict) {
	if len(vs) > 0 {
		fmt.Fprintf(w, "judged from %s on (%d samples): least-squares growth over that window against the tolerance\n\n",
			time.Duration(vs[0].fromSeconds*float64(time.Second)), vs[0].Samples)
	}
	fmt.Fprintln(w, "| series | mean | growth | per hour | tolerance | verdict |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---|")
	for _, v := range vs {
		verdict := "flat"
		switch {
		case v.Samples < 3:
			verdict = "too few samples"
		case !v.Flat:
			verdict = "GROWS"
		}
		f := func(x float64) string {
			if v.Unit == "MiB" {
				return fmt.Sprintf("%.1f MiB", x/(1<<20))
			}
			return fmt.Sprintf("%.1f", x)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", v.Name, f(v.Mean), f(v.Growth), f(v.PerHour), f(v.Tolerance), verdict)
	}
}
