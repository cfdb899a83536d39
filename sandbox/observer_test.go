package sandbox

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func lengthPrefixed(body string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// Progress reports between preparedByte and the result frame reach the
// observer in order; the result is read as before.
func TestReadResultFrameWithProgress(t *testing.T) {
	var wire bytes.Buffer
	wire.WriteByte(preparedByte)
	wire.WriteByte(progressByte)
	wire.Write(lengthPrefixed(`{"progress":1,"total":3,"message":"one"}`))
	wire.WriteByte(progressByte)
	wire.Write(lengthPrefixed(`{"progress":2,"total":null,"message":null}`))
	wire.Write(lengthPrefixed(`{"ok":true,"output":"{}"}`))
	var got []Progress
	f := new(resultFrame)
	sink := liveSink{progress: func(p Progress) { got = append(got, p) }, log: func([]byte) { t.Error("log delivered") }}
	require.NoError(t, readResultFrame(&wire, f, sink))
	require.True(t, f.OK)
	require.True(t, f.prepared)
	require.Len(t, got, 2)
	require.InDelta(t, 1, got[0].Done, 0)
	require.InDelta(t, 3, *got[0].Total, 0)
	require.Equal(t, "one", *got[0].Message)
	require.Nil(t, got[1].Total)
	require.Nil(t, got[1].Message)
}

// A progress report before the code runs, or one larger than its bound,
// is not taken: the result cannot be read.
func TestReadResultFrameRejectsBadProgress(t *testing.T) {
	for name, wire := range map[string][]byte{
		"before prepared": append([]byte{progressByte}, lengthPrefixed(`{"progress":1}`)...),
		"too large":       append([]byte{preparedByte, progressByte}, lengthPrefixed(`{"message":"`+strings.Repeat("x", maxProgressFrame)+`"}`)...),
		"not JSON":        append([]byte{preparedByte, progressByte}, lengthPrefixed(`{progress`)...),
		"truncated":       {preparedByte, progressByte, 0, 0},
	} {
		f := new(resultFrame)
		sink := liveSink{progress: func(Progress) { t.Errorf("%s: progress delivered", name) }, log: func([]byte) {}}
		err := readResultFrame(bytes.NewReader(wire), f, sink)
		require.Error(t, err, name)
	}
}

// runtime.log lines between preparedByte and the result reach the log
// sink in order with progress; one before the code runs, or past its
// bound, is not taken.
func TestReadResultFrameWithLogLines(t *testing.T) {
	var wire bytes.Buffer
	wire.WriteByte(preparedByte)
	wire.WriteByte(logByte)
	wire.Write(lengthPrefixed("[info] one\n"))
	wire.WriteByte(progressByte)
	wire.Write(lengthPrefixed(`{"progress":1}`))
	wire.WriteByte(logByte)
	wire.Write(lengthPrefixed("[error] two\n"))
	wire.Write(lengthPrefixed(`{"ok":true,"output":"{}"}`))
	var got []string
	sink := liveSink{
		progress: func(Progress) { got = append(got, "progress") },
		log:      func(p []byte) { got = append(got, string(p)) },
	}
	f := new(resultFrame)
	require.NoError(t, readResultFrame(&wire, f, sink))
	require.True(t, f.OK)
	require.Equal(t, []string{"[info] one\n", "progress", "[error] two\n"}, got)

	for name, wire := range map[string][]byte{
		"before prepared": append([]byte{logByte}, lengthPrefixed("[info] x\n")...),
		"too large":       append([]byte{preparedByte, logByte}, lengthPrefixed(strings.Repeat("x", maxLogFrame+1))...),
		"truncated":       {preparedByte, logByte, 0, 0, 0, 9, 'x'},
	} {
		sink := liveSink{progress: func(Progress) {}, log: func([]byte) { t.Errorf("%s: log delivered", name) }}
		require.Error(t, readResultFrame(bytes.NewReader(wire), new(resultFrame), sink), name)
	}
}
