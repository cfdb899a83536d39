package auth

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ended waits, a minute at most, for ctx to end and reports whether it did.
func ended(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	case <-time.After(time.Minute):
		return false
	}
}

// UntilRevoked ends a stream's context once a reload leaves its token
// authenticating no one, with the *Failure as cause; a reload that keeps
// the token, or one that only changes another identity, does not end it.
// A rejected file that disables the identity (fail closed) ends it too.
func TestUntilRevoked(t *testing.T) {
	s := loadStore(t, expand(goodFile), Options{Logger: testLogger(t)})
	pos, err := s.AuthenticateToken(tokPOS)
	require.NoError(t, err)
	dash, err := s.AuthenticateToken(tokDash)
	require.NoError(t, err)
	posCtx, stopPos := UntilRevoked(t.Context(), s, pos)
	defer stopPos()
	dashCtx, stopDash := UntilRevoked(t.Context(), s, dash)
	defer stopDash()

	// Another identity changes: pos-fleet's stream goes on.
	writeAtomic(t, s.Path(), expand(strings.Replace(goodFile, "requests_per_second: 2.5", "requests_per_second: 3", 1)))
	require.NoError(t, s.Reload())
	// The first token of pos-fleet goes.
	writeAtomic(t, s.Path(), expand(strings.Replace(goodFile, "      - {{pos}}\n", "", 1)))
	require.NoError(t, s.Reload())
	require.True(t, ended(posCtx), "the removed token's stream ends")
	assert.Equal(t, ReasonRevoked, Reason(Revoked(posCtx)))
	assert.NoError(t, dashCtx.Err(), "an unchanged identity's stream goes on")
	assert.NoError(t, Revoked(dashCtx))

	// A broken file that changes dash's entry disables it: fail closed.
	writeAtomic(t, s.Path(), expand(strings.Replace(goodFile, "methods: [list_skills]", "methods: [list_skills, read_blob", 1)))
	require.Error(t, s.Reload())
	require.True(t, ended(dashCtx), "a disabled identity's stream ends")
	assert.Equal(t, ReasonRevoked, Reason(Revoked(dashCtx)))
}

// Without an auth file nothing is revoked: the context only ends with
// its parent or stop, and no error is reported as revocation.
func TestUntilRevokedOpen(t *testing.T) {
	o := NewOpen(Limits{})
	ctx, stop := UntilRevoked(t.Context(), o, o.Identity())
	assert.NoError(t, ctx.Err())
	stop()
	assert.Error(t, ctx.Err())
	assert.NoError(t, Revoked(ctx), "stopped, not revoked")
}
