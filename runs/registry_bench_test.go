package runs

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkStartFinish starts and finishes a run beside a number of
// retained finished runs: the cost must not grow with them (a gateway
// under sustained load retains an hour of runs).
func BenchmarkStartFinish(b *testing.B) {
	for _, retained := range []int{0, 100_000} {
		b.Run(fmt.Sprintf("retained=%d", retained), func(b *testing.B) {
			g, err := Open(context.Background(), Config{Store: NewMemoryStore()})
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close()
			for range retained {
				g.Start(NewID(), "bench", "run_code", "", nil).Finish(StatusCompleted, nil)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				g.Start(NewID(), "bench", "run_code", "", nil).Finish(StatusCompleted, nil)
			}
		})
	}
}
