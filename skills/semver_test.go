package skills

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseVersion(t *testing.T) {
	good := []struct {
		in   string
		want Version
	}{
		{"0.0.0", Version{}},
		{"1.2.3", Version{Major: 1, Minor: 2, Patch: 3}},
		{"10.20.30", Version{Major: 10, Minor: 20, Patch: 30}},
		{"1.0.0-alpha", Version{Major: 1, Pre: []string{"alpha"}}},
		{"1.0.0-alpha.1", Version{Major: 1, Pre: []string{"alpha", "1"}}},
		{"1.0.0-0.3.7", Version{Major: 1, Pre: []string{"0", "3", "7"}}},
		{"1.0.0-x-y-z.--", Version{Major: 1, Pre: []string{"x-y-z", "--"}}},
		{"1.0.0+20130313144700", Version{Major: 1, Build: "20130313144700"}},
		{"1.0.0-beta+exp.sha.5114f85", Version{Major: 1, Pre: []string{"beta"}, Build: "exp.sha.5114f85"}},
		{"1.0.0+001", Version{Major: 1, Build: "001"}},
		{"18446744073709551615.0.0", Version{Major: 1<<64 - 1}},
	}
	for _, tc := range good {
		t.Run(tc.in, func(t *testing.T) {
			v, err := ParseVersion(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, v)
			assert.Equal(t, tc.in, v.String())
		})
	}
	bad := []string{
		"", "1", "1.2", "1.2.3.4", "v1.2.3", "01.2.3", "1.02.3", "1.2.03",
		"1.2.3-", "1.2.3+", "1.2.3-01", "1.2.3-a..b", "1.2.3+a..b", "1.2.3-a_b",
		"1.2.3+é", " 1.2.3", "1.2.3 ", "-1.2.3", "1.-2.3", "18446744073709551616.0.0",
		"1.2.3-alpha+", "a.b.c", "1..3",
	}
	for _, in := range bad {
		t.Run("bad/"+in, func(t *testing.T) {
			_, err := ParseVersion(in)
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrInvalidVersion))
		})
	}
	long := "1.0.0-" + string(make([]byte, 200))
	_, err := ParseVersion(long)
	assert.ErrorIs(t, err, ErrInvalidVersion)
}

// The precedence example of semver §11, in ascending order.
func TestVersionPrecedence(t *testing.T) {
	ordered := []string{
		"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
		"1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1",
		"1.1.0-1", "1.1.0-2", "1.1.0-10", "1.1.0", "2.0.0", "10.0.0",
	}
	for i := range ordered {
		for j := range ordered {
			a, b := mustVersion(t, ordered[i]), mustVersion(t, ordered[j])
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			assert.Equal(t, want, a.Compare(b), "%s vs %s", ordered[i], ordered[j])
		}
	}
	assert.Equal(t, 0, mustVersion(t, "1.0.0+a").Compare(mustVersion(t, "1.0.0+b")), "build metadata is ignored")
	assert.True(t, mustVersion(t, "1.0.0-rc.1").IsPrerelease())
	// Numeric identifiers past uint64 still compare numerically.
	assert.Equal(t, -1, mustVersion(t, "1.0.0-99999999999999999999").Compare(mustVersion(t, "1.0.0-100000000000000000000")))
}

func mustVersion(t testing.TB, s string) Version {
	t.Helper()
	v, err := ParseVersion(s)
	require.NoError(t, err)
	return v
}

func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"1.2.3", "1.0.0-alpha.1+build.5", "0.0.0-0", "01.0.0", "1.0.0-", "1.0.0+a+b", "9.9.9-x.7.z.92"} {
		f.Add(s, "1.0.0-rc.1")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		va, errA := ParseVersion(a)
		vb, errB := ParseVersion(b)
		if errA == nil && va.String() != a {
			t.Fatalf("round trip %q -> %q", a, va.String())
		}
		if errA != nil || errB != nil {
			return
		}
		if va.Compare(va) != 0 {
			t.Fatalf("%q not equal to itself", a)
		}
		if va.Compare(vb) != -vb.Compare(va) {
			t.Fatalf("compare not antisymmetric for %q, %q", a, b)
		}
		sorted := []Version{vb, va}
		slices.SortFunc(sorted, Version.Compare)
		if sorted[0].Compare(sorted[1]) > 0 {
			t.Fatalf("sort disorder for %q, %q", a, b)
		}
	})
}
