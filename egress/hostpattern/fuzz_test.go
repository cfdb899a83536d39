package hostpattern

import "testing"

// FuzzParse: any destination pattern either fails to parse or
// parses to one whose String parses back to the same pattern.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"api.example.com:443", "*.files.example.com:*", "[2001:db8::1]:443", "10.0.0.1:80",
		"*", "*.:1", "a..b:1", "x:0", "x:65536", "[::1]", "host:", "169.254.169.254/32:80", "10.0.0.0/8:*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			return
		}
		again, err := Parse(p.String())
		if err != nil {
			t.Fatalf("%q parses, but its String %q does not: %v", s, p.String(), err)
		}
		if again.String() != p.String() {
			t.Fatalf("%q: String %q parses to %q", s, p.String(), again.String())
		}
	})
}
