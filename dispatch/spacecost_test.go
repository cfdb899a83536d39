package dispatch

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/skillgate/skillgate/transport"
)

// A space is the first byte a JSON string carries as it is (0x1f is
// escaped to six): a text of spaces fills a response exactly as a text
// of letters does.
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
