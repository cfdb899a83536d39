package sandbox

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/internal/runerror"
	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	in := wire.InitConfig{RootDir: "/r", Python: "/usr/bin/python3", TmpBytes: 5}
	require.NoError(t, wire.WriteFrame(&buf, in))
	var out wire.InitConfig
	require.NoError(t, wire.ReadFrame(&buf, wire.MaxCtlFrame, &out))
	assert.Equal(t, in, out)
}

func TestReadFrameRejects(t *testing.T) {
	big := binary.BigEndian.AppendUint32(nil, maxResultFrame+1)
	for name, data := range map[string][]byte{
		"empty":       nil,
		"short":       {0, 0},
		"too large":   big,
		"truncated":   append(binary.BigEndian.AppendUint32(nil, 10), "{}"...),
		"not json":    append(binary.BigEndian.AppendUint32(nil, 3), "abc"...),
		"wrong shape": append(binary.BigEndian.AppendUint32(nil, 3), "[1]"...),
	} {
		var f resultFrame
		assert.Error(t, wire.ReadFrame(bytes.NewReader(data), maxResultFrame, &f), name)
	}
}

func TestResultFrameCheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		frame resultFrame
		ok    bool
	}{
		{"output", resultFrame{OK: true, Output: `{"a":1}`}, true},
		{"failure", resultFrame{Type: "ValueError"}, true},
		{"failure without type", resultFrame{}, false},
		{"invalid json", resultFrame{OK: true, Output: `{`}, false},
		{"empty output", resultFrame{OK: true}, false},
		{"too large", resultFrame{OK: true, Output: `"` + strings.Repeat("x", MaxOutputBytes) + `"`}, false},
		{"exactly the largest", resultFrame{OK: true, Output: `"` + strings.Repeat("x", MaxOutputBytes-2) + `"`}, true},
		{"one byte over", resultFrame{OK: true, Output: `"` + strings.Repeat("x", MaxOutputBytes-1) + `"`}, false},
		{"blobs", resultFrame{OK: true, Output: "1", Blobs: []blobRecord{{0, "text/plain"}, {1, "a/b"}}}, true},
		{"more blobs than ids", resultFrame{OK: true, Output: "1", Blobs: []blobRecord{{0, "a/b"}, {1, "a/b"}, {2, "a/b"}}}, false},
		{"blob out of order", resultFrame{OK: true, Output: "1", Blobs: []blobRecord{{1, "a/b"}}}, false},
		{"bad kind", resultFrame{OK: true, Output: "1", Blobs: []blobRecord{{0, "nope"}}}, false},
	} {
		err := tc.frame.check(2)
		assert.Equal(t, tc.ok, err == nil, "%s: %v", tc.name, err)
	}
}

func TestStatusLog(t *testing.T) {
	s := &statusLog{events: make(chan wire.Status, 8)}
	s.read(strings.NewReader("{\"ev\":\"spawned\",\"landlock\":7}\npanic: boom\n{\"ev\":\"exit\",\"signal\":9}\n{}\n"))
	var evs []wire.Status
	for ev := range s.events {
		evs = append(evs, ev)
	}
	assert.Equal(t, []wire.Status{{Ev: wire.EvSpawned, Landlock: 7}, {Ev: wire.EvExit, Signal: 9}}, evs)
	assert.Equal(t, "panic: boom\n{}\n", s.raw.String())
}

// FuzzReadResultFrame feeds readResultFrame what the sandboxed code may
// write on its result pipe: the optional prepared byte, progress reports,
// log lines and a result frame, in any order and any shape.
func FuzzReadResultFrame(f *testing.F) {
	frame := func(v any) []byte {
		var buf bytes.Buffer
		_ = wire.WriteFrame(&buf, v)
		return buf.Bytes()
	}
	ok := frame(resultFrame{OK: true, Output: `{"a":1}`, Blobs: []blobRecord{{0, "text/plain"}}})
	forged := frame(resultFrame{Type: runerror.Sandbox, Message: "x", Runtime: true})
	logLine := append([]byte{logByte}, binary.BigEndian.AppendUint32(nil, 2)...)
	f.Add(ok)
	f.Add(forged)
	f.Add(append([]byte{preparedByte}, forged...))
	f.Add(slices.Concat([]byte{preparedByte, progressByte}, frame(Progress{Done: 1}), logLine, []byte("hi"), ok))
	f.Add(slices.Concat([]byte{progressByte}, frame(Progress{Done: 1}), ok))
	f.Add([]byte{preparedByte, preparedByte, 0, 0, 0, 2, '{', '}'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		var fr resultFrame
		var progress, logs int
		sink := liveSink{
			progress: func(Progress) { progress++ },
			log: func(line []byte) {
				logs++
				assert.LessOrEqual(t, len(line), maxLogFrame)
			},
		}
		err := readResultFrame(bytes.NewReader(data), &fr, sink)
		// Reports and log lines count only once the job is set up: before
		// it the runtime alone writes, and nothing of the code's is read.
		if len(data) == 0 || data[0] != preparedByte {
			assert.False(t, fr.prepared)
			assert.Zero(t, progress+logs)
		}
		assert.LessOrEqual(t, 5*(progress+logs), len(data))
		if err != nil {
			return
		}
		// A frame the code may have written never claims a set-up failure
		// of the sandbox, nor any other runtime verdict but the two limits
		// that fail the code's own run.
		if typ := fr.errorType(); fr.prepared && IsReservedType(typ) {
			assert.Contains(t, []string{runerror.OutputTooLarge, runerror.MemoryLimit}, typ)
		}
		if fr.check(4) == nil && fr.OK {
			assert.LessOrEqual(t, len(fr.Output), MaxOutputBytes)
			assert.LessOrEqual(t, len(fr.Blobs), 4)
		}
	})
}
