package auth

import (
	"errors"
	"testing"
)

func FuzzParse(f *testing.F) {
	f.Add([]byte(expand(goodFile)))
	f.Add([]byte(expand(identity)))
	f.Add([]byte("identities: []\n"))
	f.Add([]byte("identities:\n  - name: a\n    class: agent\n    methods: &m [\"*\"]\n    namespaces: *m\n"))
	f.Add([]byte("identities:\n  - {name: a, class: device, tokens: [sgt_x], methods: [ListSkills], namespaces: [a.b]," +
		" certificates: [{common_name: x, uri: \"::\"}], limits: {requests_per_second: .inf, burst: -1}}\n"))
	f.Add([]byte("a: b\n---\nc: d\n"))
	f.Add([]byte("identities: [\n"))
	f.Add([]byte{0xff, 0xfe, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		pol, err := Parse(data, ParseOptions{})
		if err != nil {
			var fe *FileError
			if pol != nil || !errors.As(err, &fe) || len(fe.Problems) == 0 {
				t.Fatalf("bad failure: policy %v, error %v", pol, err)
			}
			return
		}
		for _, name := range pol.Names() {
			id := pol.Identity(name)
			if id == nil || !nameRE.MatchString(name) || !fileClass(string(id.Class())) {
				t.Fatalf("invalid identity %q accepted", name)
			}
			if l := id.Limits(); l.RequestsPerSecond > 0 && l.Burst < 1 {
				t.Fatalf("identity %q: rate without burst", name)
			}
		}
	})
}
