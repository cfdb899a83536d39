package dispatch

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch/auth"
)

const tokenGranted = "sgt_one-method-token-for-tests"

// servedMethods are the canonical methods of a Dispatcher with every
// option set, Initialize aside.
func servedMethods(t *testing.T) []string {
	e, _ := newExecEnv(t, completed(`{}`))
	served := slices.DeleteFunc(e.d.Methods(), func(m string) bool { return m == MethodInitialize })
	slices.Sort(served)
	return served
}

// Every method the gateway serves is grantable: the grantable names are
// the method table's, and an auth file granting any one of them alone
// loads and lets its identity call that method (the call gets past the
// method check) while any other method is refused. The identity is of
// class admin, so that the admin-only methods get past their class check
// too: the class grants no method by itself.
func TestEveryServedMethodIsGrantable(t *testing.T) {
	served := servedMethods(t)
	require.Contains(t, served, MethodWatchRun)
	assert.Equal(t, served, GrantableMethods(), "the grantable names are the served ones")
	defaults := auth.DefaultMethods()
	slices.Sort(defaults)
	assert.Equal(t, served, defaults, "auth's list for tools without a gateway")

	for _, m := range served {
		t.Run(m, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "auth.yaml")
			require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`identities:
  - {name: one, class: admin, tokens: [%s], methods: [%s], namespaces: ["*"]}
`, auth.HashToken(tokenGranted), m)), 0o600))
			store, err := auth.Load(path, auth.Options{Logger: zerolog.Nop(), Methods: GrantableMethods()})
			require.NoError(t, err, "an auth file granting %s loads", m)
			e := newEnvOpts(t, examplesDir(), 256<<10, func(o *Options) {
				o.Authn = store
				o.Runner = &fakeRunner{result: completed(`{}`)}
			})
			other := MethodListSkills
			if m == other {
				other = MethodReadBlob
			}
			for _, c := range e.as(tokenGranted) {
				_, werr := c.call(m, `{}`)
				if werr != nil {
					assert.NotEqual(t, StringPermissionDenied, werr.EffectiveCode(), "%s: %s", c.name(), werr)
				}
				_, werr = c.call(other, `{}`)
				require.NotNil(t, werr, c.name())
				assert.Equal(t, StringPermissionDenied, werr.EffectiveCode(), c.name())
			}
		})
	}
}
