package blob

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashHelperEnv); dir != "" {
		crashHelper(dir) // never returns: the parent test kills it
	}
	if dir := os.Getenv(fdHelperEnv); dir != "" {
		fdHelper(dir) // never returns
	}
	goleak.VerifyTestMain(m)
}
