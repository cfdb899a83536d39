package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseProcKV(t *testing.T) {
	in := "Name:\tskillgate\nVmRSS:\t  12345 kB\nThreads:\t7\nBad line\nVmSwap:\tx kB\nEmpty:\n"
	kv := parseProcKV([]byte(in))
	assert.Equal(t, int64(12345*1024), kv["VmRSS"])
	assert.Equal(t, int64(7), kv["Threads"])
	assert.NotContains(t, kv, "Name")
	assert.NotContains(t, kv, "VmSwap")
	assert.NotContains(t, kv, "Empty")
}

func TestParseGoMetrics(t *testing.T) {
	in := `# HELP go_goroutines Number of goroutines.
go_goroutines 10010
go_memstats_heap_inuse_bytes 1.31268608e+08
go_gc_duration_seconds{quantile="0.5"} 0.0001
skillgate_connections_active{listener="tcp"} 3
`
	m, err := parseGoMetrics(strings.NewReader(in))
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"go_goroutines": 10010, "go_memstats_heap_inuse_bytes": 131268608}, m)
}

func TestReadMemSelf(t *testing.T) {
	s, err := readMem(os.Getpid(), "")
	require.NoError(t, err)
	assert.Positive(t, s.RSS)
	assert.Positive(t, s.Threads)
	assert.Equal(t, int64(-1), s.GoHeap)
	_, err = readMem(1<<30, "")
	require.Error(t, err)
}

func TestRaiseNofile(t *testing.T) {
	n, err := raiseNofile()
	require.NoError(t, err)
	assert.Positive(t, n)
}
