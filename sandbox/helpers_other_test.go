//go:build !linux

package sandbox

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

const fakeGatewayEnv = "SKILLGATE_SANDBOX_TEST_GATEWAY"

func runFakeGateway()          {}
func closeSharedRunner() error { return nil }

func TestNewUnsupported(t *testing.T) {
	_, err := New(DefaultConfig())
	require.True(t, errors.Is(err, ErrUnsupported))
}
