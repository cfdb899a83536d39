package auth

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAnonymousAllowed(t *testing.T) {
	tests := []struct {
		addrs   []string
		allow   bool
		want    bool
		mention []string // in the error
	}{
		{[]string{"127.0.0.1:7400"}, false, true, nil},
		{[]string{"127.0.0.1:7400", "127.0.0.1:8080", "127.0.0.1:9400"}, false, true, nil},
		{[]string{"127.9.8.7:7400"}, false, true, nil},
		{[]string{"[::1]:7400"}, false, true, nil},
		{[]string{"[::ffff:127.0.0.1]:7400"}, false, true, nil},
		{[]string{"[::1%lo]:7400"}, false, true, nil},
		{[]string{"localhost:7400", "LOCALHOST.:8080"}, false, true, nil},
		{[]string{"127.0.0.1"}, false, true, nil},
		{[]string{"::1"}, false, true, nil},
		{[]string{"[::1]"}, false, true, nil},
		{[]string{"", "127.0.0.1:7400", ""}, false, true, nil},
		{[]string{""}, false, true, nil},
		{nil, false, true, nil},
		{[]string{"0.0.0.0:7400"}, false, false, []string{"0.0.0.0:7400 (all interfaces) is reachable"}},
		{[]string{":7400"}, false, false, []string{":7400 (all interfaces)"}},
		{[]string{"[::]:7400"}, false, false, []string{"[::]:7400 (all interfaces)"}},
		{[]string{"10.0.0.5:7400"}, false, false, []string{"10.0.0.5:7400 is reachable"}},
		{[]string{"203.0.113.9:443"}, false, false, []string{"203.0.113.9:443"}},
		{[]string{"gateway.example.com:7400"}, false, false, []string{"gateway.example.com:7400"}},
		{[]string{"foo.localhost:7400"}, false, false, []string{"foo.localhost:7400"}},
		{[]string{"127.0.0.1:7400", "", "0.0.0.0:8080", "10.0.0.5:9400"}, false, false,
			[]string{"0.0.0.0:8080 (all interfaces), 10.0.0.5:9400 are reachable"}},
		{[]string{"0.0.0.0:7400"}, true, true, nil},
		{[]string{"10.0.0.5:7400", "127.0.0.1:9400"}, true, true, nil},
	}
	for _, tt := range tests {
		ok, err := AnonymousAllowed(tt.addrs, tt.allow)
		assert.Equal(t, tt.want, ok, "%q allow=%v", tt.addrs, tt.allow)
		if tt.want {
			assert.NoError(t, err, "%q", tt.addrs)
			continue
		}
		require.ErrorIs(t, err, ErrAnonymousNotAllowed, "%q", tt.addrs)
		for _, m := range append(tt.mention, "--auth-file", "--allow-anonymous") {
			assert.Contains(t, err.Error(), m)
		}
		assert.NotContains(t, err.Error(), "127.0.0.1:", "loopback addresses are not blamed")
	}
}

func TestNonLoopback(t *testing.T) {
	assert.Equal(t, []string{":80", "10.1.1.1:1"}, NonLoopback([]string{"127.0.0.1:1", "", ":80", "[::1]:2", "10.1.1.1:1"}))
	assert.Nil(t, NonLoopback([]string{"localhost:1"}))
}
