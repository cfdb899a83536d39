package sandbox

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// A log buffer checked against the simplest model of it, over many random
// runs: every byte written, in order. The preview is the model's end
// behind a marker that counts the rest exactly; the sink sees exactly the
// model's first hardCap bytes, chunk by chunk with their streams;
// overflow is closed exactly when the model is past hardCap; and the
// buffer never holds more than 2*keep bytes.
func TestLogBufferAgainstAModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 11))
	for round := range 400 {
		keep := 40 + rng.IntN(60)
		hardCap := int64(rng.IntN(600))
		b := newLogBuffer(keep, hardCap)
		var all, sunk []byte
		var sunkStreams, wroteStreams []Stream
		writing := 0 // the model's length before the write under way
		b.observe(func(s Stream, p []byte) {
			require.Less(t, int64(writing), hardCap, "round %d: no chunk for the sink once the cap is reached", round)
			sunk = append(sunk, p...)
			if len(p) > 0 {
				sunkStreams = append(sunkStreams, s)
			}
		})
		for range rng.IntN(25) {
			p := make([]byte, rng.IntN(2*keep+5))
			for i := range p {
				p[i] = byte('a' + rng.IntN(26)) // ASCII: the preview keeps it byte for byte
			}
			s := []Stream{StreamStdout, StreamStderr}[rng.IntN(2)]
			if int64(len(all)) < hardCap && len(p) > 0 {
				wroteStreams = append(wroteStreams, s)
			}
			writing = len(all)
			n, err := b.stream(s).Write(p)
			require.NoError(t, err)
			require.Equal(t, len(p), n)
			all = append(all, p...)

			require.LessOrEqual(t, len(b.buf), 2*keep, "round %d: the buffer's bound", round)
			select {
			case <-b.overflow:
				require.Greater(t, int64(len(all)), hardCap, "round %d: overflow before the cap", round)
			default:
				require.LessOrEqual(t, int64(len(all)), hardCap, "round %d: no overflow past the cap", round)
			}
		}
		require.Equal(t, string(all[:min(int64(len(all)), hardCap)]), string(sunk), "round %d: the sink", round)
		require.Equal(t, wroteStreams, sunkStreams, "round %d: the sink's streams", round)
		require.Equal(t, int64(len(all)), b.Total())

		want := string(all)
		if len(all) > keep {
			room := keep - len(cutMarker(int64(len(all))))
			want = cutMarker(int64(len(all)-room)) + string(all[len(all)-room:])
		}
		require.Equal(t, want, b.Preview(), "round %d: keep %d, %d bytes written", round, keep, len(all))
	}
}
