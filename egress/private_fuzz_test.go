package egress

import "testing"

// FuzzParsePrivate: a private rule either parses or fails; it never
// panics, whatever its range or port.
func FuzzParsePrivate(f *testing.F) {
	for _, s := range []string{"127.0.0.1:8080", "db.internal:5432", "[::1]:443", "169.254.169.254/32:80",
		"10.0.0.0/8:*", "10.0.0.0/33:80", "10.0.0.0/8:", "/:1", "*", "*:80", "nope"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ParsePrivate(s)
	})
}
