package deploy

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/internal/scaleouttest"
)

// TestHAProxyConfigValid: haproxy -c accepts deploy/haproxy/haproxy.cfg
// with the variables it documents. The running configuration is exercised
// by TestScaleOutBehindHAProxy (cmd/skillgate).
func TestHAProxyConfigValid(t *testing.T) {
	bin := scaleouttest.HAProxyBinary(t)
	cmd := exec.Command(bin, "-c", "-f", "haproxy/haproxy.cfg")
	cmd.Env = append(os.Environ(), "SKILLGATE_LB_ADDR=127.0.0.1", "SKILLGATE_GW1=127.0.0.2", "SKILLGATE_GW2=127.0.0.3",
		"SKILLGATE_FRAMED_PORT=7400", "SKILLGATE_TLS_PORT=7443", "SKILLGATE_HTTP_PORT=8080", "SKILLGATE_METRICS_PORT=9400")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "Configuration file is valid")

	cmd = exec.Command(bin, "-c", "-f", "haproxy/haproxy.cfg")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	assert.Error(t, cmd.Run(), "without its variables the configuration is refused, not half-used")
}
