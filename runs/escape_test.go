package runs

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Text that encoding/json escapes six-fold still makes log events whose
// text fits maxLogEventJSON once encoded, coalesced and compacted alike,
// so that every run_event fits the smallest message size.
func TestLogEventsFitEncoded(t *testing.T) {
	g := open(t, Config{})
	r := g.Start(NewID(), "alice", "run_code", "", nil)
	r.Started(0)
	chunk := strings.Repeat("\x01<\u2028", 2000) + "\n"
	var want strings.Builder
	for range 20 {
		r.Log(StreamStdout, []byte(chunk))
		want.WriteString(chunk)
	}
	r.Finish(StatusCompleted, json.RawMessage(`{}`))

	requireFits := func(evs []Event) {
		t.Helper()
		for _, e := range evs {
			if e.Type != EventLog {
				continue
			}
			var f logFields
			require.NoError(t, json.Unmarshal(e.Data, &f))
			text, err := json.Marshal(f.Text)
			require.NoError(t, err)
			require.LessOrEqual(t, len(text)-2, maxLogEventJSON, "event %d", e.Seq)
		}
	}
	all := collect(t, r, 0)
	requireFits(all)
	require.Equal(t, want.String(), logText(all))
	compacted, _ := followPressed(t, r, func(int) bool { return true })
	requireFits(compacted)
}

// jsonTextCost never counts fewer bytes than encoding/json writes, and
// jsonPrefix cuts only between whole characters, at least one.
func TestJSONTextCost(t *testing.T) {
	for _, s := range []string{"", "plain", "\x00\x1f\b\f", "\n\r\t\"\\", "<>&", "\u2028\u2029", "é中🙂", "\xff\xfe", "a\xc3"} {
		enc, err := json.Marshal(s)
		require.NoError(t, err)
		require.GreaterOrEqual(t, jsonTextCost([]byte(s)), len(enc)-2, "%q", s)
	}
	require.Equal(t, 4, jsonPrefix([]byte("🙂🙂"), 5))
	require.Equal(t, 4, jsonPrefix([]byte("🙂"), 1), "one character at least")
	require.Equal(t, 2, jsonPrefix([]byte("ab<"), 7))
	require.Equal(t, 3, jsonPrefix([]byte("ab<"), 8))
	require.Equal(t, 0, jsonPrefix(nil, 8))
}
