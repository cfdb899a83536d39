package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// fmtRate formats requests per second compactly.
func fmtRate(r float64) string {
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.2f M", r/1e6)
	case r >= 1e3:
		return fmt.Sprintf("%.1f k", r/1e3)
	}
	return fmt.Sprintf("%.0f", r)
}

// fmtDur formats a latency with three significant digits.
func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "–"
	case d < time.Microsecond:
		return fmt.Sprintf("%d ns", d.Nanoseconds())
	case d < time.Millisecond:
		return sig3(float64(d)/1e3) + " µs"
	case d < time.Second:
		return sig3(float64(d)/1e6) + " ms"
	}
	return sig3(d.Seconds()) + " s"
}

func sig3(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// fmtKiB formats bytes as KiB with one decimal.
func fmtKiB(b float64) string { return fmt.Sprintf("%.1f KiB", b/1024) }

func fmtRatio(r float64) string {
	if r <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", r)
}

func fmtErrors(res *loadResult) string {
	if res.Errors == 0 && res.ConnFailed == 0 {
		return "0"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(res.ErrorCodes)) {
		parts = append(parts, fmt.Sprintf("%d %s", res.ErrorCodes[k], k))
	}
	if res.ConnFailed > 0 {
		parts = append(parts, fmt.Sprintf("%d conns failed: %v", res.ConnFailed, res.FirstErr))
	}
	return strings.Join(parts, ", ")
}

func writeLoadTable(w io.Writer, name string, cfg *loadConfig, res *loadResult) {
	fmt.Fprintln(w, "| server | conns | depth | method | size | req/s | p50 | p99 | p99.9 | max | answers | errors |")
	fmt.Fprintln(w, "|---|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|---|")
	size := "–"
	if cfg.Size > 0 {
		size = formatSize(cfg.Size)
	}
	h := &res.Latency
	fmt.Fprintf(w, "| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %d | %s |\n",
		name, res.Conns, cfg.Depth, cfg.Method, size, fmtRate(res.Rate()), fmtDur(h.Quantile(0.5)),
		fmtDur(h.Quantile(0.99)), fmtDur(h.Quantile(0.999)), fmtDur(h.Max()), res.Responses, fmtErrors(res))
}

// idleRow is one idle measurement for the memory table.
type idleRow struct {
	Server string
	TLS    bool
	Res    *idleResult
	Err    error
	Heap   *heapProfile // taken while the connections were held, if asked
}

func writeIdleTable(w io.Writer, rows []idleRow) {
	fmt.Fprintln(w, "| server | transport | conns held | RSS/conn after Initialize | RSS/conn after keepalive rounds | growth over the rounds | probes answered/conn | Go heap/conn | Go stack/conn | failed |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|---|")
	for _, r := range rows {
		tr := map[bool]string{false: "TCP", true: "TLS"}[r.TLS]
		if r.Err != nil && r.Res == nil {
			fmt.Fprintf(w, "| %s | %s | – | – | – | – | – | – | – | %v |\n", r.Server, tr, r.Err)
			continue
		}
		res := r.Res
		n := float64(max(res.Conns, 1))
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %.1f | %s | %s | %s |\n", r.Server, tr, res.Conns,
			fmtKiB(res.perConn(res.Before, res.Connected)), fmtKiB(res.perConn(res.Before, res.After)),
			fmtKiB(res.perConn(res.Connected, res.After)), float64(res.Probes)/n,
			goPerConn(res.Before.GoHeap, res.After.GoHeap, n), goPerConn(res.Before.GoStack, res.After.GoStack, n),
			idleFailures(r))
	}
}

func goPerConn(before, after int64, n float64) string {
	if before < 0 || after < 0 {
		return "–"
	}
	return fmtKiB(float64(after-before) / n)
}

func idleFailures(r idleRow) string {
	res := r.Res
	s := fmt.Sprintf("%d open failed, %d died", res.Failed, res.Dead)
	if res.FirstErr != "" {
		s += ": " + res.FirstErr
	}
	if r.Err != nil {
		s += "; " + r.Err.Error()
	}
	if res.Failed == 0 && res.Dead == 0 && r.Err == nil {
		return "0"
	}
	return s
}

// machine describes this machine for the report header.
func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel := "?"
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(b))
	}
	mem := "?"
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if kb := parseProcKV(b)["MemTotal"]; kb > 0 {
			mem = fmt.Sprintf("%.0f GiB", float64(kb)/(1<<30))
		}
	}
	return fmt.Sprintf("%s/%s, %d CPUs (%s), %s RAM, Linux %s, %s",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpu, mem, kernel, runtime.Version())
}
