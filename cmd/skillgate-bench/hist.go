package main

import (
	"math"
	"math/bits"
	"time"
)

// Histogram bucket layout, HDR style: values below 2^histBits are exact;
// above, every power-of-two range is split into 2^(histBits-1) buckets, so a
// bucket is at most 1/64 of its values wide and its midpoint is within
// 0.8 % of any value in it. Values above histMax fall into the last bucket.
const (
	histBits    = 7
	histSub     = 1 << histBits      // exact values, and twice the buckets per octave
	histHalf    = histSub / 2        // buckets per octave past the exact range
	histMaxBits = 37                 // about 137 s in nanoseconds
	histMax     = 1<<histMaxBits - 1 // largest value with a bucket of its own
	histBuckets = histSub + (histMaxBits-histBits)*histHalf
)

// Histogram records latencies with bounded relative error in fixed memory.
// It is not safe for concurrent use: each connection records into its own
// and they are merged at the end.
type Histogram struct {
	counts   [histBuckets]uint64
	n        uint64
	sum      float64
	min, max int64
}

// bucketOf returns the index of the bucket holding v (v >= 0).
func bucketOf(v int64) int {
	if v < histSub {
		return int(v)
	}
	if v > histMax {
		v = histMax
	}
	shift := bits.Len64(uint64(v)) - histBits
	return histSub + (shift-1)*histHalf + int(v>>shift) - histHalf
}

// bucketRange returns the smallest and largest value of bucket i.
func bucketRange(i int) (lo, hi int64) {
	if i < histSub {
		return int64(i), int64(i)
	}
	shift := (i-histSub)/histHalf + 1
	lo = int64((i-histSub)%histHalf+histHalf) << shift
	return lo, lo + 1<<shift - 1
}

// Record adds one value; negative values count as 0.
func (h *Histogram) Record(d time.Duration) {
	v := max(int64(d), 0)
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.counts[bucketOf(v)]++
	h.n++
	h.sum += float64(v)
}

// Merge adds every value recorded in o.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
}

// Count returns the number of recorded values.
func (h *Histogram) Count() uint64 { return h.n }

// Mean returns the mean of the recorded values.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}

// Max returns the largest recorded value, exactly.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Quantile returns the value at quantile q (0 < q <= 1) by the nearest-rank
// method: the smallest recorded value such that at least q of all values
// are at or below it, up to the bucket's resolution. It returns 0 when
// nothing was recorded.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var cum uint64
	for i, c := range h.counts {
		if cum += c; cum >= rank {
			if i == histBuckets-1 {
				return time.Duration(h.max) // the overflow bucket
			}
			lo, hi := bucketRange(i)
			mid := lo + (hi-lo)/2
			return time.Duration(min(max(mid, h.min), h.max))
		}
	}
	return time.Duration(h.max)
}
