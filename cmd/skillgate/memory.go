package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
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
		if free := sample[0].Value.Uint64(); free > releaseThreshold {
			debug.FreeOSMemory()
			log.Debug().Uint64("free_bytes", free).Msg("returned free heap memory to the operating system")
		}
	}
}
