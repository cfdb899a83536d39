package archtest

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/skillgate/skillgate/"

// allowed lists, per package, the project packages it may import.
// Dependencies point one way: transport <- session <- dispatch -> skills ->
// sandbox; metrics is a leaf that others receive by injection.
var allowed = map[string][]string{
	"transport": {},
	"metrics":   {},
	"sandbox":   {},
	"session":   {"transport", "metrics"},
	"skills":    {"sandbox"},
	"dispatch":  {"transport", "session", "metrics", "skills", "sandbox"},
}

// onlyInCmd are modules only the binaries may use.
var onlyInCmd = []string{"github.com/spf13/viper", "github.com/spf13/cobra"}

func TestDependencyDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"...").Output()
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		top := strings.Split(pkg, "/")[0]
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, module) {
				dep := strings.Split(strings.TrimPrefix(imp, module), "/")[0]
				if rules, ok := allowed[top]; ok && dep != top {
					require.Contains(t, rules, dep, "%s must not import %s", pkg, imp)
				}
			}
			for _, m := range onlyInCmd {
				if strings.HasPrefix(imp, m) {
					require.True(t, strings.HasPrefix(pkg, "cmd/"), "%s must not import %s: configuration lives in cmd", pkg, imp)
				}
			}
			if top == "transport" {
				require.NotContains(t, imp, ".", "transport must use the standard library only, not %s", imp)
			}
		}
	}
}
