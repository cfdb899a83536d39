package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBucketLayout(t *testing.T) {
	// Buckets tile the value range without gaps or overlaps.
	var next int64
	for i := range histBuckets {
		lo, hi := bucketRange(i)
		require.Equal(t, next, lo, "bucket %d", i)
		require.GreaterOrEqual(t, hi, lo)
		require.Equal(t, i, bucketOf(lo))
		require.Equal(t, i, bucketOf(hi))
		if lo >= histSub {
			assert.LessOrEqual(t, float64(hi-lo+1)/float64(lo), 1.0/histHalf, "bucket %d too wide", i)
		}
		next = hi + 1
	}
	assert.Equal(t, int64(histMax), next-1)
	assert.Equal(t, histBuckets-1, bucketOf(math.MaxInt64))
}

// exactQuantile is the nearest-rank quantile of sorted samples.
func exactQuantile(sorted []int64, q float64) int64 {
	rank := int(math.Ceil(q * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

func TestQuantileAgainstSortedSamples(t *testing.T) {
	dists := map[string]func(r *rand.Rand) int64{
		"log-uniform 1ns..10s": func(r *rand.Rand) int64 { return int64(math.Exp(r.Float64() * math.Log(1e10))) },
		"narrow 50us":          func(r *rand.Rand) int64 { return 50_000 + r.Int64N(500) },
		"bimodal":              func(r *rand.Rand) int64 { return []int64{80_000, 3_000_000}[r.IntN(2)] + r.Int64N(1000) },
		"tiny exact":           func(r *rand.Rand) int64 { return r.Int64N(100) },
	}
	for name, gen := range dists {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			var h Histogram
			samples := make([]int64, 20_000)
			for i := range samples {
				samples[i] = gen(r)
				h.Record(time.Duration(samples[i]))
			}
			slices.Sort(samples)
			for _, q := range []float64{0.001, 0.5, 0.9, 0.99, 0.999, 1} {
				want := float64(exactQuantile(samples, q))
				got := float64(h.Quantile(q))
				assert.InDelta(t, want, got, want/histHalf/2+0.5, "q=%v", q)
			}
			assert.Equal(t, time.Duration(samples[len(samples)-1]), h.Max())
			assert.Equal(t, uint64(len(samples)), h.Count())
		})
	}
}

func TestMerge(t *testing.T) {
	var a, b, all Histogram
	for i := range 1000 {
		d := time.Duration(i * 997)
		all.Record(d)
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	var m Histogram
	m.Merge(&a)
	m.Merge(&b)
	m.Merge(&Histogram{})
	assert.Equal(t, all, m)
}

func TestHistogramEdges(t *testing.T) {
	var h Histogram
	assert.Zero(t, h.Quantile(0.5))
	assert.Zero(t, h.Mean())
	h.Record(-5)
	h.Record(200 * time.Second) // past the last bucket: clamped, max exact
	assert.Equal(t, time.Duration(0), h.Quantile(0.5))
	assert.Equal(t, 200*time.Second, h.Quantile(1))
	assert.Equal(t, 200*time.Second, h.Max())
	assert.Equal(t, 100*time.Second, h.Mean())
}

func BenchmarkRecord(b *testing.B) {
	b.ReportAllocs()
	var h Histogram
	d := time.Duration(12345)
	for b.Loop() {
		h.Record(d)
		d = d*7%10_000_000 + 1
	}
}
