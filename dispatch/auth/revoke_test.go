package auth

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A watched stream ends at the reload that removes its token, with the
// revocation as the context's cause; streams of tokens that stay, and of
// the same identity's other token, go on; stop forgets the watch.
func TestRevocationsEndStreamsOfRemovedTokens(t *testing.T) {
	var revs *Revocations
	path := tempFile(t, expand(goodFile))
	s, err := Load(path, Options{Logger: testLogger(t), OnReload: func(p *Policy, err error) { revs.Reloaded(p, err) }})
	require.NoError(t, err)
	revs = NewRevocations(s)

	pos, err := s.Authenticate(tokPOS, nil)
	require.NoError(t, err)
	pos2, err := s.Authenticate(tokPOS2, nil)
	require.NoError(t, err)
	agent, err := s.Authenticate(tokAgent, nil)
	require.NoError(t, err)
	posCtx, stopPos := revs.Watch(context.Background(), pos)
	defer stopPos()
	pos2Ctx, stopPos2 := revs.Watch(context.Background(), pos2)
	defer stopPos2()
	agentCtx, stopAgent := revs.Watch(context.Background(), agent)
	assert.Equal(t, 3, revs.Watching())

	// The first token of pos-fleet goes; its second stays.
	writeAtomic(t, path, strings.Replace(expand(goodFile), "      - "+HashToken(tokPOS)+"\n", "", 1))
	require.NoError(t, s.Reload())
	require.Error(t, posCtx.Err(), "the removed token's stream ends at the reload")
	assert.Equal(t, ReasonRevoked, Reason(context.Cause(posCtx)))
	assert.NoError(t, pos2Ctx.Err(), "the identity's other token stays")
	assert.NoError(t, agentCtx.Err())

	stopAgent()
	assert.True(t, errors.Is(context.Cause(agentCtx), context.Canceled), "stop ends the context as canceled")
	assert.Equal(t, 2, revs.Watching())
}

// A rejected file fails closed: the streams of identities it changed end
// as their calls would be refused. A credential already gone when Watch
// is called ends its stream at once; nil Revocations and nil identities
// watch nothing.
func TestRevocationsFailClosedAndEdgeCases(t *testing.T) {
	var revs *Revocations
	path := tempFile(t, expand(goodFile))
	s, err := Load(path, Options{Logger: testLogger(t), OnReload: func(p *Policy, err error) { revs.Reloaded(p, err) }})
	require.NoError(t, err)
	revs = NewRevocations(s)
	agent, err := s.Authenticate(tokAgent, nil)
	require.NoError(t, err)
	ctx, stop := revs.Watch(context.Background(), agent)
	defer stop()

	writeAtomic(t, path, strings.Replace(expand(goodFile), "requests_per_second: 2.5", "requests_per_second: [", 1))
	require.Error(t, s.Reload())
	require.Error(t, ctx.Err(), "a rejected file disables the identity it changed")

	late, stopLate := revs.Watch(context.Background(), agent)
	defer stopLate()
	assert.Error(t, late.Err(), "already revoked when watched")

	var none *Revocations
	nctx, nstop := none.Watch(context.Background(), agent)
	none.Reloaded(nil, nil)
	assert.NoError(t, nctx.Err())
	assert.Zero(t, none.Watching())
	nstop()
	_, idStop := revs.Watch(context.Background(), nil)
	idStop()
}
