package auth

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAuthenticateToken(t *testing.T) {
	s := loadStore(t, expand(goodFile), Options{Logger: testLogger(t)})
	tests := []struct {
		name     string
		token    string
		identity string
		err      error
		reason   FailureReason
	}{
		{"good", tokPOS, "pos-fleet", nil, ReasonNone},
		{"second token of an identity", tokPOS2, "pos-fleet", nil, ReasonNone},
		{"other identity", tokAgent, "agent.main_1", nil, ReasonNone},
		{"missing", "", "", ErrNoCredentials, ReasonMissing},
		{"unknown", "sgt_nope", "", ErrBadCredentials, ReasonInvalid},
		{"hash instead of token", HashToken(tokPOS), "", ErrBadCredentials, ReasonInvalid},
		{"almost", tokPOS + " ", "", ErrBadCredentials, ReasonInvalid},
		{"too long", strings.Repeat("x", MaxTokenLen+1), "", ErrBadCredentials, ReasonInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := s.AuthenticateToken(tt.token)
			assert.Equal(t, tt.reason, Reason(err))
			if tt.err != nil {
				assert.Nil(t, id)
				require.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.identity, id.Name())
		})
	}
}

// The answer to a bad token must not tell an unknown token from a revoked
// one, nor echo it.
func TestBadCredentialMessagesAreIndistinguishable(t *testing.T) {
	path := tempFile(t, expand(goodFile))
	s, err := Load(path, Options{Logger: testLogger(t)})
	require.NoError(t, err)
	writeAtomic(t, path, strings.Replace(expand(goodFile), HashToken(tokPOS), HashToken("sgt_new"), 1))
	require.NoError(t, s.Reload())

	_, errUnknown := s.AuthenticateToken("sgt_unknown")
	_, errRevoked := s.AuthenticateToken(tokPOS)
	assert.Equal(t, ReasonInvalid, Reason(errUnknown))
	assert.Equal(t, ReasonRevoked, Reason(errRevoked))
	assert.Equal(t, errUnknown.Error(), errRevoked.Error())
	assert.NotContains(t, errRevoked.Error(), tokPOS)
	assert.NotContains(t, errUnknown.Error(), "sgt_unknown")
}

func TestRevokedAfterReload(t *testing.T) {
	path := tempFile(t, expand(goodFile))
	var reloads []error
	s, err := Load(path, Options{Logger: testLogger(t), OnReload: func(_ *Policy, err error) { reloads = append(reloads, err) }})
	require.NoError(t, err)

	viaPOS, err := s.AuthenticateToken(tokPOS)
	require.NoError(t, err)
	viaPOS2, err := s.AuthenticateToken(tokPOS2)
	require.NoError(t, err)
	byName := s.Policy().Identity("pos-fleet")

	// Revoke tokPOS and narrow the identity's namespaces.
	changed := strings.Replace(expand(goodFile), "      - "+HashToken(tokPOS)+"\n", "", 1)
	changed = strings.Replace(changed, `namespaces: ["acme", "skills"]`, `namespaces: ["acme"]`, 1)
	writeAtomic(t, path, changed)
	require.NoError(t, s.Reload())
	assert.Equal(t, []error{nil}, reloads)

	_, err = s.AuthenticateToken(tokPOS)
	assert.ErrorIs(t, err, ErrBadCredentials)
	assert.Equal(t, ReasonRevoked, Reason(err))

	// A connection authenticated with the revoked token loses access; one
	// with another token of the identity follows the new policy.
	_, err = s.Revalidate(viaPOS)
	assert.ErrorIs(t, err, ErrBadCredentials)
	assert.Equal(t, ReasonRevoked, Reason(err))

	cur, err := s.Revalidate(viaPOS2)
	require.NoError(t, err)
	assert.NotSame(t, viaPOS2, cur)
	assert.True(t, viaPOS2.SeesNamespace("skills"))
	assert.False(t, cur.SeesNamespace("skills"))
	same, err := s.Revalidate(cur)
	require.NoError(t, err)
	assert.Same(t, cur, same)

	cur, err = s.Revalidate(byName)
	require.NoError(t, err)
	assert.Equal(t, "pos-fleet", cur.Name())

	// Putting the token back un-revokes it.
	writeAtomic(t, path, expand(goodFile))
	require.NoError(t, s.Reload())
	id, err := s.AuthenticateToken(tokPOS)
	require.NoError(t, err)
	assert.Equal(t, "pos-fleet", id.Name())
}

func TestRevalidateTokenMovedToOtherIdentity(t *testing.T) {
	path := tempFile(t, expand(goodFile))
	s, err := Load(path, Options{Logger: testLogger(t)})
	require.NoError(t, err)
	id, err := s.AuthenticateToken(tokDash)
	require.NoError(t, err)
	writeAtomic(t, path, strings.Replace(expand(goodFile), "name: dash", "name: dash2", 1))
	require.NoError(t, s.Reload())
	_, err = s.Revalidate(id)
	assert.Equal(t, ReasonRevoked, Reason(err))
}

func TestRevalidateCurrentDoesNotAllocate(t *testing.T) {
	s := loadStore(t, expand(goodFile), Options{Logger: testLogger(t)})
	id, err := s.AuthenticateToken(tokPOS)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(100, func() { _, _ = s.Revalidate(id) })
	assert.Zero(t, allocs)
}

func TestRevalidateRejectsForeignIdentities(t *testing.T) {
	s := loadStore(t, expand(goodFile), Options{Logger: testLogger(t)})
	_, err := s.Revalidate(nil)
	assert.ErrorIs(t, err, ErrNoCredentials)
	_, err = s.Revalidate(Anonymous(Limits{}))
	assert.ErrorIs(t, err, ErrNoCredentials)
}

// Deleting the last token of a block list leaves "tokens:" empty (YAML
// null): that means no tokens, and the reload that revokes them succeeds.
func TestEmptyTokensMeansNone(t *testing.T) {
	path := tempFile(t, expand(goodFile))
	s, err := Load(path, Options{Logger: testLogger(t)})
	require.NoError(t, err)
	without := strings.Replace(expand(goodFile), "      - "+HashToken(tokPOS)+"\n", "", 1)
	without = strings.Replace(without, "      - "+expand("{{pos2}}")+"\n", "", 1)
	require.Contains(t, without, "    tokens:\n    certificates:")
	writeAtomic(t, path, without)
	require.NoError(t, s.Reload())
	for _, tok := range []string{tokPOS, tokPOS2} {
		_, err := s.AuthenticateToken(tok)
		assert.Equal(t, ReasonRevoked, Reason(err))
	}
	_, err = s.AuthenticateToken(tokAgent)
	assert.NoError(t, err)

	// Every list key reads an empty value so, and an empty list of
	// methods or namespaces allows nothing.
	pol, err := Parse([]byte("identities:\n  - name: x\n    class: agent\n    tokens:\n    certificates:\n    methods:\n    namespaces:\n"), ParseOptions{})
	require.NoError(t, err)
	assert.Zero(t, pol.Tokens()+pol.Certificates())
	assert.False(t, pol.Identity("x").AllowsMethod("list_skills"), "an empty methods key allows nothing")
	assert.False(t, pol.Identity("x").SeesNamespace("acme"))
	pol, err = Parse([]byte("identities:\n"), ParseOptions{})
	require.NoError(t, err)
	assert.Empty(t, pol.Names())
}

// A rejected reload never keeps alive what the new file removed: an
// identity whose entry the file changed or dropped is disabled until a
// valid version loads; one whose entry reads the same (comments and
// quoting aside) keeps working.
func TestRejectedReloadFailsClosed(t *testing.T) {
	path := tempFile(t, expand(goodFile))
	var reloads []error
	s, err := Load(path, Options{Logger: testLogger(t), OnReload: func(_ *Policy, err error) { reloads = append(reloads, err) }})
	require.NoError(t, err)
	viaPOS2, err := s.AuthenticateToken(tokPOS2)
	require.NoError(t, err)

	// tokPOS removed from pos-fleet, the agent's entry restyled, and a
	// mistake in dash's entry that makes the whole file invalid.
	broken := strings.Replace(expand(goodFile), "      - "+HashToken(tokPOS)+"\n", "", 1)
	broken = strings.Replace(broken, "    tokens: ["+HashToken(tokAgent)+"]\n",
		"    tokens:   # restyled\n      - \""+HashToken(tokAgent)+"\"\n", 1)
	broken = strings.Replace(broken, "    methods: [list_skills]\n", "    methods: [list_skills]\n    colour: blue\n", 1)
	writeAtomic(t, path, broken)
	require.ErrorIs(t, s.Reload(), ErrInvalidFile)

	for _, tok := range []string{tokPOS, tokPOS2, tokDash} {
		_, err := s.AuthenticateToken(tok)
		assert.ErrorIs(t, err, ErrBadCredentials, "an identity the rejected file changed is disabled")
		assert.Equal(t, ReasonRevoked, Reason(err))
	}
	_, err = s.Revalidate(viaPOS2)
	assert.ErrorIs(t, err, ErrBadCredentials, "open connections lose it too")
	id, err := s.AuthenticateToken(tokAgent)
	require.NoError(t, err, "an identity the file left as it was keeps working")
	assert.Equal(t, "agent.main_1", id.Name())
	assert.Equal(t, []string{"agent.main_1"}, s.Policy().Names())

	// Reloading the same broken file reports it again and changes nothing.
	require.ErrorIs(t, s.Reload(), ErrInvalidFile)
	_, err = s.AuthenticateToken(tokAgent)
	require.NoError(t, err)

	// A valid file brings everything back, without the deleted token.
	writeAtomic(t, path, strings.Replace(expand(goodFile), "      - "+HashToken(tokPOS)+"\n", "", 1))
	require.NoError(t, s.Reload())
	_, err = s.AuthenticateToken(tokPOS2)
	require.NoError(t, err)
	_, err = s.AuthenticateToken(tokPOS)
	assert.Equal(t, ReasonRevoked, Reason(err))
	assert.Len(t, reloads, 3)
}

// Files that cannot be read as an identities list keep no identity; a
// file that cannot be read for another reason changes nothing.
func TestRejectedReloadWithoutEntries(t *testing.T) {
	for name, content := range map[string]string{
		"syntax error":   "identities: [",
		"empty file":     "",
		"not a list":     "identities: {}\n",
		"duplicate name": expand(goodFile) + "  - name: agent.main_1\n    class: agent\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := tempFile(t, expand(goodFile))
			s, err := Load(path, Options{Logger: testLogger(t)})
			require.NoError(t, err)
			writeAtomic(t, path, content)
			require.ErrorIs(t, s.Reload(), ErrInvalidFile)
			_, err = s.AuthenticateToken(tokAgent)
			assert.ErrorIs(t, err, ErrBadCredentials)
			// Saving the old valid version again restores it.
			writeAtomic(t, path, expand(goodFile))
			require.NoError(t, s.Reload())
			_, err = s.AuthenticateToken(tokAgent)
			assert.NoError(t, err)
		})
	}

	path := tempFile(t, expand(goodFile))
	s, err := Load(path, Options{Logger: testLogger(t)})
	require.NoError(t, err)
	before := s.Policy()
	require.NoError(t, os.Remove(path))
	require.NoError(t, os.Mkdir(path, 0o700))
	require.Error(t, s.Reload())
	assert.Same(t, before, s.Policy(), "an unreadable file says nothing about its content")
	require.NoError(t, os.Remove(path))
	require.ErrorIs(t, s.Reload(), os.ErrNotExist)
	_, err = s.AuthenticateToken(tokAgent)
	assert.ErrorIs(t, err, ErrBadCredentials, "a deleted file removed every token")
}

func TestReloadUnchangedFileIsNoop(t *testing.T) {
	calls := 0
	s := loadStore(t, expand(goodFile), Options{Logger: testLogger(t), OnReload: func(*Policy, error) { calls++ }})
	before := s.Policy()
	require.NoError(t, s.Reload())
	assert.Same(t, before, s.Policy())
	assert.Zero(t, calls)
}

func TestLoadErrors(t *testing.T) {
	_, err := Load(t.TempDir()+"/missing.yaml", Options{})
	require.ErrorIs(t, err, os.ErrNotExist)

	_, err = Load(tempFile(t, "identities: {}\n"), Options{})
	require.ErrorIs(t, err, ErrInvalidFile)
	var fe *FileError
	require.True(t, errors.As(err, &fe))
	assert.True(t, strings.HasSuffix(fe.File, "auth.yaml"))
	assert.Contains(t, err.Error(), "auth.yaml:1:13: identities: must be a list")
}

func TestAuthenticatePrefersToken(t *testing.T) {
	s := loadStore(t, expand(goodFile), Options{Logger: testLogger(t)})
	id, err := s.Authenticate(tokAgent, nil)
	require.NoError(t, err)
	assert.Equal(t, "agent.main_1", id.Name())
	_, err = s.Authenticate("", nil)
	assert.Equal(t, ReasonMissing, Reason(err))
	_, err = s.Authenticate("sgt_wrong", nil)
	assert.Equal(t, ReasonInvalid, Reason(err))
}

func TestOpen(t *testing.T) {
	o := NewOpen(Limits{RequestsPerSecond: 5})
	for _, tok := range []string{"", "anything"} {
		id, err := o.Authenticate(tok, nil)
		require.NoError(t, err)
		assert.Same(t, o.Identity(), id)
	}
	id, err := o.Revalidate(nil)
	require.NoError(t, err)
	assert.True(t, id.IsAnonymous())
	assert.Equal(t, 5.0, id.Limits().RequestsPerSecond)
}
