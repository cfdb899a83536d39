package sandbox

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// What pid 1 writes that is no status event is kept up to 4 KiB: a line
// is cut to the room left, and once 4 KiB are kept the rest is dropped.
func TestStatusLogRawBound(t *testing.T) {
	read := func(text string) string {
		s := &statusLog{events: make(chan wire.Status, 8)}
		s.read(strings.NewReader(text))
		return s.raw.String()
	}
	exactly := strings.Repeat("a", 4095)
	assert.Equal(t, exactly+"\n", read(exactly+"\nmore\n"), "4 KiB kept, the next line dropped")
	assert.Equal(t, strings.Repeat("b", 4096)+"\n", read(strings.Repeat("b", 5000)+"\nmore\n"), "a long line cut to the room")
	assert.Equal(t, "x\n"+strings.Repeat("c", 4094)+"\n", read("x\n"+strings.Repeat("c", 5000)+"\n"), "cut to the room left")
}
