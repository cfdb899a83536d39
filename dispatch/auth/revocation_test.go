package auth

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
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
// the token, or one that only changes another identity, does not end it,
// nor does removing one token of an identity end the streams of its other
// token. A rejected file that disables the identity (fail closed) ends it
// too. stop ends the context as canceled, not revoked.
func TestUntilRevoked(t *testing.T) {
	s := loadStore(t, expand(goodFile), Options{Logger: testLogger(t)})
	pos, err := s.AuthenticateToken(tokPOS)
	require.NoError(t, err)
	pos2, err := s.AuthenticateToken(tokPOS2)
	require.NoError(t, err)
	dash, err := s.AuthenticateToken(tokDash)
	require.NoError(t, err)
	agent, err := s.AuthenticateToken(tokAgent)
	require.NoError(t, err)
	posCtx, stopPos := UntilRevoked(t.Context(), s, pos)
	defer stopPos()
	pos2Ctx, stopPos2 := UntilRevoked(t.Context(), s, pos2)
	defer stopPos2()
	dashCtx, stopDash := UntilRevoked(t.Context(), s, dash)
	defer stopDash()
	agentCtx, stopAgent := UntilRevoked(t.Context(), s, agent)

	// Another identity changes: pos-fleet's stream goes on.
	writeAtomic(t, s.Path(), expand(strings.Replace(goodFile, "requests_per_second: 2.5", "requests_per_second: 3", 1)))
	require.NoError(t, s.Reload())
	// The first token of pos-fleet goes; its second stays.
	writeAtomic(t, s.Path(), expand(strings.Replace(goodFile, "      - {{pos}}\n", "", 1)))
	require.NoError(t, s.Reload())
	require.True(t, ended(posCtx), "the removed token's stream ends")
	assert.Equal(t, ReasonRevoked, Reason(Revoked(posCtx)))
	assert.NoError(t, pos2Ctx.Err(), "the identity's other token keeps its stream")
	assert.NoError(t, dashCtx.Err(), "an unchanged identity's stream goes on")
	assert.NoError(t, Revoked(dashCtx))

	stopAgent()
	assert.True(t, errors.Is(context.Cause(agentCtx), context.Canceled), "stop ends the context as canceled")
	assert.NoError(t, Revoked(agentCtx), "stopped, not revoked")

	// A broken file that changes dash's entry disables it: fail closed.
	writeAtomic(t, s.Path(), expand(strings.Replace(goodFile, "methods: [list_skills]", "methods: [list_skills, read_blob", 1)))
	require.Error(t, s.Reload())
	require.True(t, ended(dashCtx), "a disabled identity's stream ends")
	assert.Equal(t, ReasonRevoked, Reason(Revoked(dashCtx)))
}

// A credential that no longer authenticates when the stream begins (a
// reload came between its authentication and UntilRevoked) ends the
// context before UntilRevoked returns, so the stream sends nothing. A nil
// identity is never revoked.
func TestUntilRevokedAlreadyRevokedAndNilIdentity(t *testing.T) {
	s := loadStore(t, expand(goodFile), Options{Logger: testLogger(t)})
	agent, err := s.AuthenticateToken(tokAgent)
	require.NoError(t, err)
	writeAtomic(t, s.Path(), strings.Replace(expand(goodFile), "requests_per_second: 2.5", "requests_per_second: [", 1))
	require.Error(t, s.Reload(), "a rejected file disables the identity it changed")

	late, stopLate := UntilRevoked(t.Context(), s, agent)
	defer stopLate()
	require.Error(t, late.Err(), "already revoked when watched")
	assert.Equal(t, ReasonRevoked, Reason(Revoked(late)))

	nctx, nstop := UntilRevoked(t.Context(), s, nil)
	writeAtomic(t, s.Path(), expand(goodFile))
	require.NoError(t, s.Reload())
	assert.NoError(t, nctx.Err(), "a nil identity watches nothing")
	nstop()
}

// stop releases the watch: no goroutine is left waiting for the Store's
// next version (synctest fails the test if one is).
func TestUntilRevokedStopReleasesTheWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := loadStore(t, expand(goodFile), Options{Logger: testLogger(t)})
		pos, err := s.AuthenticateToken(tokPOS)
		require.NoError(t, err)
		ctx, stop := UntilRevoked(context.Background(), s, pos)
		writeAtomic(t, s.Path(), expand(strings.Replace(goodFile, "requests_per_second: 2.5", "requests_per_second: 3", 1)))
		require.NoError(t, s.Reload())
		synctest.Wait()
		assert.NoError(t, ctx.Err(), "the token stays")
		stop()
		synctest.Wait()
	})
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
