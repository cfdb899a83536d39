package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// A frame is a big-endian uint32 length and that many bytes of JSON: what
// pid 1 (another process, possibly another build) reads.
func TestWriteFrameBytes(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteFrame(&buf, map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	want := append([]byte{0, 0, 0, 7}, `{"a":1}`...)
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("frame % x, want % x", buf.Bytes(), want)
	}
}

func TestWriteFrameErrors(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteFrame(&buf, func() {}); err == nil || !strings.Contains(err.Error(), "encode frame") {
		t.Fatalf("a value JSON cannot encode: %v", err)
	}
	if buf.Len() != 0 {
		t.Fatalf("nothing is written for it, got %d bytes", buf.Len())
	}
	if err := WriteFrame(failingWriter{}, 1); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("the writer's error: %v", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestFrameRoundTrip(t *testing.T) {
	in := InitConfig{RootDir: "/r", EnvDirs: []string{"/e"}, EnvFDs: []int{10}, Python: "/usr/bin/python3",
		TmpBytes: 5, OpenFiles: 64, Network: true}
	var buf bytes.Buffer
	if err := WriteFrame(&buf, in); err != nil {
		t.Fatal(err)
	}
	var out InitConfig
	if err := ReadFrame(&buf, MaxCtlFrame, &out); err != nil {
		t.Fatal(err)
	}
	if out.RootDir != "/r" || len(out.EnvDirs) != 1 || out.EnvFDs[0] != 10 || out.TmpBytes != 5 || !out.Network {
		t.Fatalf("round trip: %+v", out)
	}
}

// frameOf is a frame whose body is n bytes of a JSON string.
func frameOf(n int) []byte {
	body := `"` + strings.Repeat("x", n-2) + `"`
	return append([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, body...)
}

// The limit is the body's size: a body of exactly limit bytes is read,
// one more is refused before any of it is read.
func TestReadFrameLimit(t *testing.T) {
	const limit = 100
	for _, n := range []int{limit - 1, limit} {
		var s string
		if err := ReadFrame(bytes.NewReader(frameOf(n)), limit, &s); err != nil {
			t.Fatalf("a body of %d bytes with a limit of %d: %v", n, limit, err)
		}
		if len(s) != n-2 {
			t.Fatalf("a body of %d bytes read as %d characters", n, len(s))
		}
	}
	_, err := ReadRawFrame(bytes.NewReader(frameOf(limit+1)), limit)
	if err == nil || err.Error() != "frame of 101 bytes exceeds 100" {
		t.Fatalf("a body of 101 bytes with a limit of 100: %v", err)
	}
	// A length past 2^31 is compared as a length, not as a negative int.
	_, err = ReadRawFrame(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff}), MaxCtlFrame)
	if err == nil || !strings.Contains(err.Error(), "exceeds 1048576") {
		t.Fatalf("a length of 2^32-1: %v", err)
	}
	if MaxCtlFrame != 1<<20 {
		t.Fatalf("MaxCtlFrame %d", MaxCtlFrame)
	}
}

func TestReadFrameErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"empty":       {nil, "read frame header: EOF"},
		"short":       {[]byte{0, 0}, "read frame header: unexpected EOF"},
		"truncated":   {append([]byte{0, 0, 0, 10}, "{}"...), "read frame body: unexpected EOF"},
		"no body":     {[]byte{0, 0, 0, 3}, "read frame body: EOF"},
		"not json":    {append([]byte{0, 0, 0, 3}, "abc"...), "decode frame: "},
		"wrong shape": {append([]byte{0, 0, 0, 3}, "[1]"...), "decode frame: "},
	} {
		var st Status
		err := ReadFrame(bytes.NewReader(tc.data), MaxCtlFrame, &st)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	// An empty body is read as such (and is no JSON).
	data, err := ReadRawFrame(bytes.NewReader([]byte{0, 0, 0, 0}), 0)
	if err != nil || len(data) != 0 {
		t.Fatalf("an empty frame: %q, %v", data, err)
	}
}

// Frames follow one another on the stream: a read takes exactly its own.
func TestReadFrameTakesOneFrame(t *testing.T) {
	var buf bytes.Buffer
	for _, ev := range []string{EvSpawned, EvExit} {
		if err := WriteFrame(&buf, Status{Ev: ev}); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"spawned", "exit"} {
		var st Status
		if err := ReadFrame(&buf, MaxCtlFrame, &st); err != nil || st.Ev != want {
			t.Fatalf("%+v, %v, want %s", st, err, want)
		}
	}
}

// The numbers and names both sides of the protocol use: a change is a
// protocol change, made on both sides at once.
func TestProtocolValues(t *testing.T) {
	for got, want := range map[int]int{FDCtl: 3, FDStatus: 4, FDStdout: 5, FDJob: 6, FDResult: 7, FDStderr: 8,
		FDEgress: 9, SandboxUID: 1000, EgressPort: 3128} {
		if got != want {
			t.Errorf("%d, want %d", got, want)
		}
	}
	for got, want := range map[string]string{InitVerb: "__skillgate_sandbox_init__", BootScript: "/opt/skillgate/runtime/_boot.py",
		SkillsTarget: "/job/skills", BlobsTarget: "/job/blobs", EnvMount: "/opt/env"} {
		if got != want {
			t.Errorf("%q, want %q", got, want)
		}
	}
}

// MonotonicNow is CLOCK_MONOTONIC in ns: it moves with time.
func TestMonotonicNow(t *testing.T) {
	a := MonotonicNow()
	time.Sleep(2 * time.Millisecond)
	b := MonotonicNow()
	if a <= 0 || b-a < int64(2*time.Millisecond) || b-a > int64(time.Minute) {
		t.Fatalf("MonotonicNow %d then %d", a, b)
	}
}
