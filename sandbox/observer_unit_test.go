package sandbox

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Every function of an Observer may be nil, and so may the Observer; the
// ones given are called with what the run reports.
func TestObserverCalls(t *testing.T) {
	var none *Observer
	none.admitted()
	none.started(time.Second)
	none.progress(Progress{Done: 1})
	assert.Nil(t, none.logSink())

	empty := &Observer{}
	empty.admitted()
	empty.started(time.Second)
	empty.progress(Progress{Done: 1})
	assert.Nil(t, empty.logSink())

	var got []any
	o := &Observer{
		Admitted: func() { got = append(got, "admitted") },
		Started:  func(q time.Duration) { got = append(got, q) },
		Progress: func(p Progress) { got = append(got, p.Done) },
		Log:      func(s Stream, p []byte) { got = append(got, s.String()+":"+string(p)) },
	}
	o.admitted()
	o.started(3 * time.Second)
	o.progress(Progress{Done: 0.5})
	o.logSink()(StreamStderr, []byte("x"))
	assert.Equal(t, []any{"admitted", 3 * time.Second, 0.5, "stderr:x"}, got)
	assert.Equal(t, "stdout", StreamStdout.String())
	assert.Equal(t, "log", StreamLog.String())
}
