package deploy_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// The binary under test is built once per test run, into a directory
// TestMain removes.
var build struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		_ = os.RemoveAll(build.dir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// gatewayBinary builds ../cmd/skillgate (once) and returns its path.
func gatewayBinary(t testing.TB) string {
	t.Helper()
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "skillgate-deploy-")
		if build.err != nil {
			return
		}
		build.path = filepath.Join(build.dir, "skillgate")
		cmd := exec.Command("go", "build", "-o", build.path, "../cmd/skillgate")
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build ../cmd/skillgate: %w\n%s", err, out)
		}
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.path
}

// serveFlag is one flag of "skillgate serve" as its help prints it.
type serveFlag struct {
	Name    string
	Type    string // pflag's type word: string, duration, int, ...; "bool" when none
	Default string // empty when the help shows none
}

var serveFlags struct {
	once  sync.Once
	flags map[string]serveFlag
	err   error
}

// binaryFlags returns the flags of the built binary's "serve --help".
func binaryFlags(t testing.TB) map[string]serveFlag {
	t.Helper()
	bin := gatewayBinary(t)
	serveFlags.once.Do(func() {
		out, err := exec.Command(bin, "serve", "--help").Output()
		if err != nil {
			serveFlags.err = fmt.Errorf("skillgate serve --help: %w", err)
			return
		}
		serveFlags.flags = parseServeHelp(string(out))
		if len(serveFlags.flags) == 0 {
			serveFlags.err = fmt.Errorf("no flags found in skillgate serve --help:\n%s", out)
		}
	})
	if serveFlags.err != nil {
		t.Fatal(serveFlags.err)
	}
	return serveFlags.flags
}

var (
	helpLineRE    = regexp.MustCompile(`^\s+(?:-[A-Za-z], )?--([a-z0-9][a-z0-9-]*)(?: ([A-Za-z0-9]+))?(?:\s{2,}(.*))?$`)
	helpDefaultRE = regexp.MustCompile(`\(default (?:"([^"]*)"|([^)]*))\)\s*$`)
)

// parseServeHelp reads cobra/pflag usage lines ("  -h, --name type  usage
// (default x)"). "help" itself is left out: it is no setting.
func parseServeHelp(help string) map[string]serveFlag {
	flags := make(map[string]serveFlag)
	sc := bufio.NewScanner(strings.NewReader(help))
	for sc.Scan() {
		m := helpLineRE.FindStringSubmatch(sc.Text())
		if m == nil || m[1] == "help" {
			continue
		}
		f := serveFlag{Name: m[1], Type: m[2]}
		if f.Type == "" {
			f.Type = "bool"
		}
		if d := helpDefaultRE.FindStringSubmatch(m[3]); d != nil {
			f.Default = d[1] + d[2]
		}
		flags[f.Name] = f
	}
	return flags
}

// envFlag maps SKILLGATE_KEEPALIVE_INTERVAL to keepalive-interval.
func envFlag(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "SKILLGATE_")
	if !ok || rest == "" {
		return "", false
	}
	return strings.ReplaceAll(strings.ToLower(rest), "_", "-"), true
}

// readFile reads a file of deploy/ (paths relative to it).
func readFile(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
