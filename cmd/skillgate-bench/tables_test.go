package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Latencies keep three significant digits in the unit of their range.
func TestFmtDur(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                         "–",
		-time.Second:              "–",
		1:                         "1 ns",
		999:                       "999 ns",
		time.Microsecond:          "1.00 µs",
		1500:                      "1.50 µs",
		12_340:                    "12.3 µs",
		999_000:                   "999 µs",
		time.Millisecond:          "1.00 ms",
		12_345 * time.Microsecond: "12.3 ms",
		250 * time.Millisecond:    "250 ms",
		time.Second:               "1.00 s",
		2500 * time.Millisecond:   "2.50 s",
		125 * time.Second:         "125 s",
	} {
		assert.Equal(t, want, fmtDur(d), "%d ns", int64(d))
	}
}

func TestFmtErrors(t *testing.T) {
	assert.Equal(t, "0", fmtErrors(&loadResult{}))
	assert.Equal(t, "2 -32602, 1 RATE_LIMITED", fmtErrors(&loadResult{Errors: 3, ErrorCodes: map[string]uint64{"RATE_LIMITED": 1, "-32602": 2}}))
	assert.Equal(t, "1 conns failed: refused", fmtErrors(&loadResult{ConnFailed: 1, FirstErr: errors.New("refused")}),
		"failed connections alone are errors too")
	assert.Equal(t, "4 X, 2 conns failed: refused", fmtErrors(&loadResult{Errors: 4, ErrorCodes: map[string]uint64{"X": 4}, ConnFailed: 2, FirstErr: errors.New("refused")}))
}

// One row per idle measurement: per-connection RSS between the samples,
// probes per connection, the Go heap and stacks when the metrics had them
// (– when not), and the failures.
func TestWriteIdleTable(t *testing.T) {
	var b bytes.Buffer
	writeIdleTable(&b, []idleRow{
		{Server: "skillgate", Res: &idleResult{Conns: 4, Probes: 10,
			Before:    memSample{RSS: 1 << 20, GoHeap: 1 << 20, GoStack: 0},
			Connected: memSample{RSS: 1<<20 + 4*2048},
			After:     memSample{RSS: 1<<20 + 4*3072, GoHeap: 1<<20 + 4*1024, GoStack: 4 * 512}}},
		{Server: "peer", TLS: true, Res: &idleResult{Conns: 2, Failed: 1, Dead: 2, FirstErr: "reset",
			Before: memSample{GoHeap: -1, GoStack: 0}, After: memSample{GoHeap: 0, GoStack: -1}}, Err: errors.New("late")},
		{Server: "gone", Err: errors.New("no server")},
	})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 5)
	assert.Equal(t, "| skillgate | TCP | 4 | 2.0 KiB | 3.0 KiB | 1.0 KiB | 2.5 | 1.0 KiB | 0.5 KiB | 0 |", lines[2])
	assert.Equal(t, "| peer | TLS | 2 | 0.0 KiB | 0.0 KiB | 0.0 KiB | 0.0 | – | – | 1 open failed, 2 died: reset; late |", lines[3])
	assert.Equal(t, "| gone | TCP | – | – | – | – | – | – | – | no server |", lines[4])
}

func TestIdleFailures(t *testing.T) {
	assert.Equal(t, "0", idleFailures(idleRow{Res: &idleResult{}}))
	assert.Equal(t, "1 open failed, 0 died", idleFailures(idleRow{Res: &idleResult{Failed: 1}}))
	assert.Equal(t, "0 open failed, 1 died", idleFailures(idleRow{Res: &idleResult{Dead: 1}}))
	assert.Equal(t, "0 open failed, 0 died; late", idleFailures(idleRow{Res: &idleResult{}, Err: errors.New("late")}))
	assert.Equal(t, "0", idleFailures(idleRow{Res: &idleResult{FirstErr: "ignored when nothing failed"}}))
}

// The warm-up is a quarter of the run or twice the retention, whichever
// is longer, but at most half the run.
func TestSoakWarmupBounds(t *testing.T) {
	for _, c := range []struct{ duration, retention, want time.Duration }{
		{30 * time.Minute, time.Minute, 7*time.Minute + 30*time.Second}, // a quarter
		{30 * time.Minute, 5 * time.Minute, 10 * time.Minute},           // twice the retention
		{30 * time.Minute, 10 * time.Minute, 15 * time.Minute},          // at most half
	} {
		assert.Equal(t, c.want, soakWarmup(soakConfig{Duration: c.duration, Retention: c.retention}), "%v, %v", c.duration, c.retention)
	}
}

// A sample exactly at the warm-up's end is judged; three samples are
// enough; growth exactly at the tolerance is flat, and one more is not.
func TestJudgeSoakEdges(t *testing.T) {
	cfg := soakConfig{Duration: 40 * time.Second, Retention: 5 * time.Second} // warm-up 10 s
	at := func(sec, goroutines int64) soakSample {
		return soakSample{At: time.Duration(sec) * time.Second, Goroutines: goroutines}
	}
	vs := judgeSoak([]soakSample{at(9, 999), at(10, 0), at(11, 5), at(12, 10)}, cfg)
	require.Len(t, vs, 4)
	g := vs[1]
	assert.Equal(t, "goroutines", g.Name)
	assert.Equal(t, 3, g.Samples, "the sample at 10 s is judged, the one at 9 s is not")
	assert.InDelta(t, 10, g.Growth, 1e-9)
	assert.InDelta(t, 10, g.Tolerance, 1e-9, "the floor of 10 goroutines")
	assert.True(t, g.Flat, "growth exactly at the tolerance")

	vs = judgeSoak([]soakSample{at(10, 0), at(11, 5), at(12, 11)}, cfg)
	assert.False(t, vs[1].Flat, "11 more goroutines")
	vs = judgeSoak([]soakSample{at(10, 0), at(12, 0)}, cfg)
	assert.False(t, vs[1].Flat, "two samples judge nothing")
	assert.Zero(t, vs[1].Tolerance)
}

func TestWriteSoakVerdicts(t *testing.T) {
	var b bytes.Buffer
	writeSoakVerdicts(&b, nil)
	assert.True(t, strings.HasPrefix(b.String(), "| series |"), "no verdicts, no window line: %q", b.String())
	b.Reset()
	writeSoakVerdicts(&b, []soakVerdict{{Name: "RSS", Samples: 12, fromSeconds: 450}})
	assert.True(t, strings.HasPrefix(b.String(), "judged from 7m30s on (12 samples):"), b.String())
}

// Sizes go up to 64 MiB, in any unit.
func TestParseSizeLimit(t *testing.T) {
	for _, s := range []string{"64m", "65536k", "67108864"} {
		n, err := parseSize(s)
		require.NoError(t, err, s)
		assert.Equal(t, 64<<20, n, s)
	}
	for _, s := range []string{"65m", "65537k", "67108865"} {
		_, err := parseSize(s)
		assert.ErrorIs(t, err, errBadSize, s)
	}
}

// A frame asked for exactly its unpadded size gets no pad member; one
// byte more gets one.
func TestTemplateSizeAtItsBare(t *testing.T) {
	bare, err := newTemplate("list_skills", []byte(`{}`), 0)
	require.NoError(t, err)
	n := bare.bodyLen(1, 1)
	exact, err := newTemplate("list_skills", []byte(`{}`), n)
	require.NoError(t, err)
	assert.Equal(t, bare, exact)
	assert.NotContains(t, string(exact.head)+string(exact.tail), `"pad"`)
	more, err := newTemplate("list_skills", []byte(`{}`), n+20)
	require.NoError(t, err)
	assert.Contains(t, string(more.head)+string(more.tail), `"pad"`)
}

func TestFreeAddr(t *testing.T) {
	addr, err := freeAddr()
	require.NoError(t, err)
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host)
	assert.NotEqual(t, "0", port)
}

func TestRunWithoutACommand(t *testing.T) {
	var out bytes.Buffer
	err := run(t.Context(), nil, nil, &out, &out)
	assert.ErrorIs(t, err, errUsage)
	assert.Contains(t, out.String(), "usage")
}

// waitRounds returns once the probes reach want, but not before minWait;
// with want 0 at minWait; and at maxWait whatever the probes say.
func TestWaitRounds(t *testing.T) {
	for _, c := range []struct {
		name           string
		want, answered uint64
		waited         time.Duration
	}{
		{"reached", 5, 5, time.Second},
		{"never reached", 5, 4, 3 * time.Second},
		{"no target", 0, 0, time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				waitRounds(t.Context(), c.want, time.Second, 3*time.Second, func() uint64 { return c.answered })
				assert.Equal(t, c.waited, time.Since(start))
			})
		})
	}
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 250*time.Millisecond)
		defer cancel()
		start := time.Now()
		waitRounds(ctx, 5, time.Second, 3*time.Second, func() uint64 { return 0 })
		assert.Equal(t, 250*time.Millisecond, time.Since(start), "a cancelled context ends the wait at once")
	})
}
