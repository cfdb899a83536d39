package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFitLine(t *testing.T) {
	slope, mean := fitLine([]float64{0, 1, 2, 3}, []float64{1, 3, 5, 7})
	assert.InDelta(t, 2, slope, 1e-9)
	assert.InDelta(t, 4, mean, 1e-9)
	slope, mean = fitLine([]float64{5, 5}, []float64{1, 3})
	assert.Zero(t, slope, "one x: no slope")
	assert.InDelta(t, 2, mean, 1e-9)
}

// soakRun makes samples every minute for 30 minutes, with rss(i) as RSS
// and the other series steady.
func soakRun(rss func(i int) int64) []soakSample {
	var out []soakSample
	for i := 0; i <= 30; i++ {
		out = append(out, soakSample{At: time.Duration(i) * time.Minute, RSS: rss(i), Goroutines: 40, FDs: 30, DataBytes: 5 << 20})
	}
	return out
}

func TestJudgeSoak(t *testing.T) {
	cfg := soakConfig{Duration: 30 * time.Minute, Retention: time.Minute}
	assert.Equal(t, 7*time.Minute+30*time.Second, soakWarmup(cfg))

	// A start-up climb during the warm-up and a sawtooth after it: flat.
	flat := judgeSoak(soakRun(func(i int) int64 {
		if i < 5 {
			return int64(20+5*i) << 20
		}
		return int64(45+i%3) << 20
	}), cfg)
	require.Len(t, flat, len(soakSeries))
	for _, v := range flat {
		assert.True(t, v.Flat, v.Name)
		assert.Equal(t, 23, v.Samples, "from 8 minutes on")
	}
	assert.InDelta(t, 46<<20, flat[0].Mean, 1<<20)

	// 1 MiB a minute after the warm-up: 22 MiB over the window.
	leak := judgeSoak(soakRun(func(i int) int64 { return int64(40+i) << 20 }), cfg)
	assert.False(t, leak[0].Flat)
	assert.InDelta(t, 22<<20, leak[0].Growth, 1)
	assert.InDelta(t, 60<<20, leak[0].PerHour, 1)
	assert.True(t, leak[1].Flat, "the other series stay flat")

	// Too short to judge: nothing is flat.
	short := judgeSoak(soakRun(func(int) int64 { return 1 })[:9], cfg)
	for _, v := range short {
		assert.False(t, v.Flat)
	}
	var out bytes.Buffer
	writeSoakVerdicts(&out, short)
	assert.Contains(t, out.String(), "too few samples")
	out.Reset()
	writeSoakVerdicts(&out, leak)
	assert.Contains(t, out.String(), "| RSS | 59.0 MiB | 22.0 MiB | 60.0 MiB | 5.9 MiB | GROWS |")
}

func TestSoakRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--duration", "0s"}, {"--sandbox-workers", "0"}, {"--retention", "-1s"}, {"--pause", "-1s"}} {
		var out bytes.Buffer
		err := run(t.Context(), append([]string{"soak"}, args...), nil, &out, &out)
		assert.ErrorIs(t, err, errUsage, "%v", args)
	}
}

// The documented defaults, the interval drawn from the duration (a
// twentieth, at least 5 s), and each bound at its edge.
func TestSoakFlags(t *testing.T) {
	cfg, err := parseSoakFlags(nil)
	require.NoError(t, err)
	assert.Equal(t, soakConfig{Bin: "bin/skillgate", Duration: 30 * time.Minute, Interval: 90 * time.Second,
		Pause: 100 * time.Millisecond, Workers: 2, Retention: time.Minute, SkillsDir: "examples/skills"}, cfg)

	for args, interval := range map[string]time.Duration{
		"--duration 100s": 5 * time.Second, "--duration 101s": 5050 * time.Millisecond, "--duration 120s": 6 * time.Second,
		"--duration 1s": 5 * time.Second, "--duration 1s --interval 1ns": time.Nanosecond,
	} {
		cfg, err := parseSoakFlags(strings.Fields(args))
		require.NoError(t, err, args)
		assert.Equal(t, interval, cfg.Interval, args)
	}
	cfg, err = parseSoakFlags(strings.Fields("--duration 1ns --pause 0s --sandbox-workers 1 --retention 1ns --interval 1ns"))
	require.NoError(t, err, "the smallest accepted values")
	assert.Equal(t, soakConfig{Bin: "bin/skillgate", Duration: 1, Interval: 1, Workers: 1, Retention: 1, SkillsDir: "examples/skills"}, cfg)
	for _, args := range []string{"--interval -1ns", "--duration -1ns", "--pause -1ns", "--retention 0s", "--sandbox-workers 0"} {
		_, err := parseSoakFlags(strings.Fields(args))
		assert.ErrorIs(t, err, errUsage, args)
	}
}
