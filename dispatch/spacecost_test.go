package dispatch

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/skillgate/skillgate/transport"
)

// A space is the first byte a JSON string carries as it is: a text of
// spaces fills a response exactly as a text of letters does, and one more
// is refused.
func TestReadFullSpacesAtTheLimit(t *testing.T) {
	e := newEnv(t, examplesDir())
	at := e.putKind(t, "text/plain", []byte(strings.Repeat(" ", textLimit)))
	over := e.putKind(t, "text/plain", []byte(strings.Repeat(" ", textLimit+1)))
	for _, c := range e.fronts() {
		var r ReadBlobResult
		mustCall(t, c, "read_blob", `{"blob_id":"`+at+`","mode":"full"}`, &r)
		assert.False(t, r.Truncated, c.name())
		assert.Equal(t, EncodingUTF8, r.Encoding, c.name())
		assert.Equal(t, strings.Repeat(" ", textLimit), r.Content, c.name())
		checkError(t, c, paramCase{"read_blob", `{"blob_id":"` + over + `","mode":"full"}`,
			transport.StringInvalidParams, "mode"})
	}
}

// 0x1f, the last control character, is escaped to six bytes (\u001f): a
// text of them fits whole up to a sixth of the room; one more is cut
// there, and says so.
func TestReadFullControlsAtTheLimit(t *testing.T) {
	e := newEnv(t, examplesDir())
	const fits = textLimit / 6
	at := e.putKind(t, "text/plain", []byte(strings.Repeat("\x1f", fits)))
	over := e.putKind(t, "text/plain", []byte(strings.Repeat("\x1f", fits+1)))
	for _, c := range e.fronts() {
		for _, tc := range []struct {
			id        string
			truncated bool
		}{{at, false}, {over, true}} {
			var r ReadBlobResult
			mustCall(t, c, "read_blob", `{"blob_id":"`+tc.id+`","mode":"full"}`, &r)
			assert.Equal(t, tc.truncated, r.Truncated, c.name())
			assert.Equal(t, EncodingUTF8, r.Encoding, c.name())
			assert.Equal(t, strings.Repeat("\x1f", fits), r.Content, c.name())
		}
	}
}
