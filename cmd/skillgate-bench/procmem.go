package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// memSample is a process's memory at one moment, in bytes.
type memSample struct {
	RSS, RSSAnon, HWM int64 // /proc/<pid>/status VmRSS, RssAnon, VmHWM
	PSS, PrivateDirty int64 // /proc/<pid>/smaps_rollup Pss, Private_Dirty
	Threads           int64
	// From the server's Prometheus metrics, when it has them (-1: unknown).
	GoHeap, GoStack, Goroutines int64
}

// readMem samples the memory of process pid and, when metricsURL is set,
// the Go runtime figures it exports.
func readMem(pid int, metricsURL string) (memSample, error) {
	s := memSample{GoHeap: -1, GoStack: -1, Goroutines: -1}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	kv := parseProcKV(status)
	s.RSS, s.RSSAnon, s.HWM, s.Threads = kv["VmRSS"], kv["RssAnon"], kv["VmHWM"], kv["Threads"]
	if rollup, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid)); err == nil {
		kv := parseProcKV(rollup)
		s.PSS, s.PrivateDirty = kv["Pss"], kv["Private_Dirty"]
	}
	if metricsURL != "" {
		if m, err := scrapeGoMetrics(metricsURL); err == nil {
			s.GoHeap, s.GoStack, s.Goroutines = m["go_memstats_heap_inuse_bytes"], m["go_memstats_stack_inuse_bytes"], m["go_goroutines"]
		}
	}
	return s, nil
}

// parseProcKV parses "Key:   123 kB" lines; kB values are returned in
// bytes, plain numbers as they are. Other lines are skipped.
func parseProcKV(b []byte) map[string]int64 {
	out := make(map[string]int64)
	for line := range bytes.Lines(b) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		f := strings.Fields(string(v))
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && f[1] == "kB" {
			n *= 1024
		}
		out[string(k)] = n
	}
	return out
}

// scrapeGoMetrics reads the unlabeled go_* gauges of a Prometheus text
// endpoint.
func scrapeGoMetrics(url string) (map[string]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return parseGoMetrics(io.LimitReader(resp.Body, 16<<20))
}

func parseGoMetrics(r io.Reader) (map[string]int64, error) {
	out := make(map[string]int64)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || !strings.HasPrefix(name, "go_") || strings.ContainsRune(name, '{') {
			continue
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			out[name] = int64(f)
		}
	}
	return out, sc.Err()
}
