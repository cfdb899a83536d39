package main

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// Free heap that has piled up past this is returned to the operating system.
const (
	releaseCheckEvery = 15 * time.Second
	releaseThreshold  = 16 << 20
)

// releaseIdleMemory returns free heap memory to the operating system once a
// lot of it has piled up. The Go runtime keeps memory it freed until the
// heap reaches its next collection goal; after a burst (thousands of
// connections opening at once) that leftover is most of the gateway's
// resident memory, and a gateway holding idle connections may not grow
// again for a long time. The check is one runtime/metrics read; releasing
// costs a collection, at most once per check.
func releaseIdleMemory(ctx context.Context, log zerolog.Logger) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	t := time.NewTicker(releaseCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		releaseIfPiledUp(sample[0].Value.Uint64(), log)
	}
}

// releaseIfPiledUp returns the free heap to the operating system when
// more than releaseThreshold of it has piled up, and says whether it did.
func releaseIfPiledUp(free uint64, log zerolog.Logger) bool {
	if free <= releaseThreshold {
		return false
	}
	debug.FreeOSMemory()
	log.Debug().Uint64("free_bytes", free).Msg("returned free heap memory to the operating system")
	return true
}

// memoryLimit is the memory the process may use: its cgroup's limit (v2,
// then v1) when one is set, else the machine's physical memory. It returns
// 0 when neither can be read.
func memoryLimit() int64 {
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if n, ok := readLimit(path); ok {
			if phys := physicalMemory(); phys > 0 && n > phys {
				return phys // v1 reports "no limit" as a huge number
			}
			return n
		}
	}
	return physicalMemory()
}

func readLimit(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil && n > 0 // "max" (v2's no limit) fails to parse
}

func physicalMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
