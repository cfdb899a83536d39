package auth

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Only a burst above 0 without a rate is worth a warning: limits that set
// neither, or a burst of 0, are silent.
func TestBurstWarningOnlyAboveZero(t *testing.T) {
	for _, tc := range []struct {
		limits string
		want   []string
	}{
		{"limits: {concurrent_runs: 2}\n", nil},
		{"limits: {burst: 0}\n", nil},
		{"limits: {burst: 1}\n", []string{"7:13: identities[0].limits: burst has no effect"}},
	} {
		pol, err := Parse([]byte(expand(identity+"    "+tc.limits)), ParseOptions{})
		require.NoError(t, err, tc.limits)
		assertProblems(t, pol.Warnings(), tc.want)
	}
}
