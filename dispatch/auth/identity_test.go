package auth

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMethodsAndNamespaces(t *testing.T) {
	pol, err := Parse([]byte(expand(goodFile)), ParseOptions{})
	require.NoError(t, err)
	pos, agent, dash := pol.Identity("pos-fleet"), pol.Identity("agent.main_1"), pol.Identity("dash")
	anon := Anonymous(Limits{})
	var none *Identity

	methods := []struct {
		id     *Identity
		method string
		want   bool
	}{
		{pos, "list_skills", true},
		{pos, "execute_skill", true},
		{pos, "run_code", false},
		{pos, "ListSkills", false}, // aliases are mapped by the dispatcher
		{pos, "", false},
		{agent, "run_code", true},
		{agent, "anything", true},
		{dash, "list_skills", true},
		{dash, "read_blob", false},
		{anon, "run_code", true},
		{none, "list_skills", false},
	}
	for _, tt := range methods {
		assert.Equal(t, tt.want, tt.id.AllowsMethod(tt.method), "%s %s", tt.id, tt.method)
		err := tt.id.CheckMethod(tt.method)
		if tt.want {
			assert.NoError(t, err)
		} else {
			assert.ErrorIs(t, err, ErrPermissionDenied)
			assert.Equal(t, ReasonMethodDenied, Reason(err))
		}
	}

	skills := []struct {
		id    *Identity
		skill string
		want  bool
	}{
		{pos, "acme.math.add", true},
		{pos, "acme", true},
		{pos, "skills.protocol.guide", true},
		{pos, "acmex.math.add", false},
		{pos, "other.thing", false},
		{pos, "ACME.math.add", false},
		{pos, "", false},
		{pos, ".acme", false},
		{agent, "whatever.x", true},
		{dash, "acme.math.add", false},
		{anon, "acme.math.add", true},
		{none, "acme.math.add", false},
	}
	for _, tt := range skills {
		assert.Equal(t, tt.want, tt.id.SeesSkill(tt.skill), "%s %s", tt.id, tt.skill)
		err := tt.id.CheckSkill(tt.skill)
		if tt.want {
			assert.NoError(t, err)
		} else {
			assert.ErrorIs(t, err, ErrPermissionDenied)
			assert.Equal(t, ReasonNamespaceDenied, Reason(err))
		}
	}
	assert.True(t, pos.SeesNamespace("acme"))
	assert.False(t, pos.SeesNamespace("acme.math"))
}

func TestPermissionMessages(t *testing.T) {
	pol, err := Parse([]byte(expand(goodFile)), ParseOptions{})
	require.NoError(t, err)
	pos := pol.Identity("pos-fleet")
	assert.EqualError(t, pos.CheckMethod("run_code"), `permission denied: this identity may not call "run_code"`)
	assert.EqualError(t, pos.CheckSkill("other.math.add"), `permission denied: this identity may not use skills of namespace "other"`)
	long := pos.CheckMethod(string(make([]byte, 1000)))
	assert.Less(t, len(long.Error()), 400, "client input is cut in messages")
}

func TestAnonymousIdentity(t *testing.T) {
	id := Anonymous(Limits{ConcurrentRuns: 3})
	assert.Equal(t, AnonymousName, id.Name())
	assert.Equal(t, ClassAnonymous, id.Class())
	assert.True(t, id.IsAnonymous())
	assert.Equal(t, 3, id.Limits().ConcurrentRuns)
	assert.Equal(t, []string{Wildcard}, id.Methods())
	assert.Equal(t, []string{Wildcard}, id.Namespaces())

	var none *Identity
	assert.False(t, none.IsAnonymous())
	assert.Equal(t, "<none>", none.String())
	assert.Empty(t, none.Name())
	assert.Empty(t, none.Class())
	assert.Nil(t, none.Methods())
}

func TestReasonsAndClassesAreBounded(t *testing.T) {
	seen := map[FailureReason]bool{}
	for _, r := range Reasons() {
		assert.NotEqual(t, ReasonNone, r)
		assert.False(t, seen[r])
		seen[r] = true
	}
	assert.Len(t, Classes(), 6)
	assert.Equal(t, ReasonNone, Reason(nil))
	assert.Equal(t, ReasonNone, Reason(ErrBadCredentials))
	assert.Equal(t, ReasonRevoked, failRevoked.Reason())
	wrapped := fmt.Errorf("initialize: %w", failCertUnknown)
	assert.Equal(t, ReasonCertUnknown, Reason(wrapped))
	assert.ErrorIs(t, wrapped, ErrBadCredentials)
	le := &LimitError{Err: ErrRateLimited, RetryAfter: 1500 * time.Microsecond}
	assert.EqualError(t, le, "rate limit exceeded")
	assert.Equal(t, int64(2), le.RetryAfterMillis())
}

func TestTokens(t *testing.T) {
	a, err := NewToken()
	require.NoError(t, err)
	b, err := NewToken()
	require.NoError(t, err)
	assert.NotEqual(t, a, b)
	assert.Len(t, a, len(TokenPrefix)+43)
	assert.Regexp(t, `^sgt_[A-Za-z0-9_-]{43}$`, a)

	assert.Equal(t, "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", HashToken("test"))
	d, ok := parseHash(HashToken(a))
	require.True(t, ok)
	assert.Equal(t, hashPresented(a), d)
}
