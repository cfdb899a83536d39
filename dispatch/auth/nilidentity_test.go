package auth

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A nil identity (a gateway without auth) is narrowed to no network, sees
// no namespaces and is not limited.
func TestNilIdentityAnswers(t *testing.T) {
	var none *Identity
	patterns, narrowed := none.Network()
	assert.Nil(t, patterns)
	assert.True(t, narrowed)
	assert.Nil(t, none.RunCodeNetwork())
	assert.Nil(t, none.Namespaces())

	l := NewLimiter(newFakeClock().now)
	release, ok := l.TryAcquireRun(none)
	assert.True(t, ok)
	release()
	assert.NoError(t, l.AllowRequest(none))
}
