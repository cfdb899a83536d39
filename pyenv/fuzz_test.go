package pyenv

import (
	"errors"
	"testing"
)

// FuzzParseRequirementsFile: any file parses or fails with
// ErrInvalidRequirement, never panics; what parses renders back to a file
// that parses to the same requirements.
func FuzzParseRequirementsFile(f *testing.F) {
	for _, seed := range []string{
		"pypdf==6.16.1\n", "a[b,c]>=1,<2; python_version >= '3.8' --hash=" + sha + "\n",
		"x \\\n --hash " + sha + "\n# c\n", "-e .\n", "foo @ https://x\n", "foo; (os_name == 'a' or extra == \"b\")\n",
		"foo (>=1)\n", "\xff", "foo===1+x\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		reqs, err := ParseRequirementsFile(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidRequirement) {
				t.Fatalf("error without ErrInvalidRequirement: %v", err)
			}
			return
		}
		again, err := ParseRequirementsFile(RequirementsFile(reqs))
		if err != nil {
			t.Fatalf("rendered file does not parse: %v\n%s", err, RequirementsFile(reqs))
		}
		if len(again) != len(reqs) {
			t.Fatalf("round trip lost requirements: %d != %d", len(again), len(reqs))
		}
		for i := range reqs {
			if again[i].line() != reqs[i].line() {
				t.Fatalf("round trip changed %q into %q", reqs[i].line(), again[i].line())
			}
		}
	})
}
