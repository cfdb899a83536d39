package sandbox

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The sandbox's pid 1 is this test binary re-executed.
	MaybeInit()
	if os.Getenv(fakeGatewayEnv) != "" {
		runFakeGateway() // a gateway the tests kill; never returns
	}
	code := m.Run()
	if err := closeSharedRunner(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
