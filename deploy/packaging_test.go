package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch/auth"
)

// TestContainerfile: ports, health check, entrypoint and the files the image
// copies match the binary and the repository.
func TestContainerfile(t *testing.T) {
	cf := parseContainerfile(readFile(t, containerPath))
	env := cf.env()
	exposed, err := cf.exposed()
	require.NoError(t, err)
	for _, flag := range []string{"listen", "http-listen", "metrics-listen"} {
		port := defaultPort(t, flag)
		assert.Contains(t, exposed, port, "EXPOSE the default port of --%s", flag)
		assert.Equal(t, port, addrPort(t, env["SKILLGATE_"+envName(flag)]), "ENV for --%s", flag)
	}
	tlsPort := addrPort(t, configKeys(t, k8sConfig)["tls-listen"])
	assert.Contains(t, exposed, tlsPort, "EXPOSE the TLS port the manifests use")

	require.Len(t, cf["ENTRYPOINT"], 1)
	argv, err := execForm(cf["ENTRYPOINT"][0])
	require.NoError(t, err)
	assert.Equal(t, []string{"/usr/local/bin/skillgate", "serve"}, argv)

	require.Len(t, cf["HEALTHCHECK"], 1)
	hc := cf["HEALTHCHECK"][0]
	assert.Contains(t, hc, healthPath)
	assert.Contains(t, hc, "SKILLGATE_METRICS_LISTEN", "the check follows the metrics port")
	assert.Contains(t, hc, pythonInImage, "no curl in the image: the check uses the sandbox's python")

	assert.Equal(t, pythonInImage, env["SKILLGATE_PYTHON"])
	assert.Equal(t, skillsInImage, env["SKILLGATE_SKILLS_DIR"])
	assert.True(t, slices.ContainsFunc(cf["COPY"], func(a string) bool {
		f := strings.Fields(a)
		return len(f) == 2 && f[1] == skillsInImage && dirExists("../"+f[0])
	}), "the image copies the example skills to %s", skillsInImage)
	assert.True(t, slices.ContainsFunc(cf["RUN"], func(a string) bool {
		return strings.Contains(a, "apt-get install") && strings.Contains(a, "python3")
	}), "the runtime stage installs python3")
	require.NotEmpty(t, cf["USER"])
	assert.NotContains(t, []string{"0", "root", "0:0"}, cf["USER"][len(cf["USER"])-1], "the image defaults to a non-root user")
	assert.Len(t, cf["FROM"], 2, "multi-stage: build and runtime")
}

// envName turns a flag name into its SKILLGATE_ suffix.
func envName(flag string) string {
	return strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

func dirExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// TestSystemdUnit: the stop timeout covers the drain, the process keeps its
// cgroup subtree, and the hardening never switches off what the sandbox
// needs.
func TestSystemdUnit(t *testing.T) {
	svc := parseUnit(readFile(t, unitPath))["Service"]
	require.NotNil(t, svc)
	one := func(key string) string {
		require.Len(t, svc[key], 1, key)
		return svc[key][0]
	}
	stop, err := time.ParseDuration(one("TimeoutStopSec"))
	require.NoError(t, err)
	drain, err := time.ParseDuration(configKeys(t, exampleConfig)["drain-timeout"])
	require.NoError(t, err)
	assert.Greater(t, stop, drain, "TimeoutStopSec must exceed the config's drain-timeout")
	assert.Contains(t, one("ExecStart"), "--config /etc/skillgate/skillgate.yaml")
	assert.Equal(t, "mixed", one("KillMode"), "SIGTERM only to the gateway, so that runs can finish during the drain")
	for key, want := range map[string]string{"Delegate": "yes", "NoNewPrivileges": "yes", "ProtectSystem": "strict", "Restart": "on-failure"} {
		assert.Equal(t, want, one(key), key)
	}
	for _, key := range []string{"User", "DynamicUser", "PrivateUsers", "ProtectKernelTunables", "ProtectKernelLogs",
		"ProtectControlGroups", "ProtectHostname", "ProcSubset", "MemoryDenyWriteExecute", "UMask"} {
		assert.NotContains(t, svc, key, "%s breaks the sandbox (see the unit's comments)", key)
	}
	for _, ns := range []string{"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"} {
		assert.Contains(t, strings.Fields(one("RestrictNamespaces")), ns)
	}
	for _, call := range []string{"@mount", "sethostname", "landlock_restrict_self"} {
		assert.Contains(t, strings.Fields(one("SystemCallFilter")), call)
	}
	assert.Contains(t, svc["ReadWritePaths"], configKeys(t, exampleConfig)["data-dir"])
}

// TestSystemdAnalyzeVerify lets systemd itself check the unit where
// systemd-analyze exists (it needs no running systemd).
func TestSystemdAnalyzeVerify(t *testing.T) {
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed")
	}
	verifyUnit(t, tool, strings.ReplaceAll(readFile(t, unitPath), "/usr/local/bin/skillgate", gatewayBinary(t)))
}

// verifyUnit has systemd-analyze check a unit's text, warnings included.
func verifyUnit(t *testing.T, tool, unit string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "skillgate.service")
	require.NoError(t, os.WriteFile(path, []byte(unit), 0o644))
	out, err := exec.Command(tool, "verify", path).CombinedOutput()
	assert.NoError(t, err, string(out))
	assert.Empty(t, strings.TrimSpace(string(out)), "systemd-analyze verify warnings")
}

// kustomize renders a kustomization as kubectl apply -k would: with
// kubectl's built-in kustomize, else the standalone one (.ci/setup
// installs it where kubectl is missing).
func kustomize(t *testing.T, dir string) string {
	t.Helper()
	var cmd *exec.Cmd
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		cmd = exec.Command(kubectl, "kustomize", dir)
	} else if tool, err := exec.LookPath("kustomize"); err == nil {
		cmd = exec.Command(tool, "build", dir)
	} else {
		t.Skip("neither kubectl nor kustomize installed (.ci/setup installs kustomize)")
	}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return string(out)
}

// TestKustomizeBuilds renders the manifests.
func TestKustomizeBuilds(t *testing.T) {
	out := kustomize(t, "kubernetes")
	for _, kind := range []string{"Namespace", "ServiceAccount", "ConfigMap", "Secret", "Deployment", "Service",
		"PodDisruptionBudget", "ServiceMonitor", "PrometheusRule"} {
		assert.Contains(t, out, "\nkind: "+kind+"\n")
	}
}

// TestS3OverlayBuilds: the S3 overlay builds and takes its settings from
// the Secret.
func TestS3OverlayBuilds(t *testing.T) {
	out := kustomize(t, "kubernetes-s3")
	for _, want := range []string{"name: skillgate-s3", "SKILLGATE_BLOB_STORE: s3://", "envFrom:", "replicas: 3"} {
		assert.Contains(t, out, want)
	}
}

// TestAuthFileExample: the auth file in secret.yaml, and the identity its
// comments show, are valid auth files.
func TestAuthFileExample(t *testing.T) {
	var s struct {
		StringData map[string]string `yaml:"stringData"`
	}
	loadOne(t, "kubernetes/secret.yaml", "Secret", "skillgate-auth", &s)
	file := s.StringData["auth.yaml"]
	_, err := auth.Parse([]byte(file), auth.ParseOptions{})
	require.NoError(t, err, "the shipped auth file")

	var example []string
	for _, line := range strings.Split(file, "\n") {
		if rest, ok := strings.CutPrefix(line, "# "); ok {
			example = append(example, strings.ReplaceAll(rest, "sha256:<64 hex digits>", auth.HashToken("sgt_example")))
		}
	}
	require.NotEmpty(t, example)
	doc := "version: 1\nidentities:\n" + strings.Join(example, "\n") + "\n"
	pol, err := auth.Parse([]byte(doc), auth.ParseOptions{})
	require.NoError(t, err, "the commented example identity:\n%s", doc)
	assert.Equal(t, []string{"pos-fleet"}, pol.Names())
}

// TestScrapeExample: the example scrape config targets the default metrics
// port and loads the rule files of this folder.
func TestScrapeExample(t *testing.T) {
	var cfg struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			MetricsPath   string `yaml:"metrics_path"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	loadYAML(t, scrapeExample, &cfg)
	assert.Equal(t, []string{filepath.Base(alertsPath), filepath.Base(recordingPath)}, cfg.RuleFiles)
	require.Len(t, cfg.ScrapeConfigs, 1)
	sc := cfg.ScrapeConfigs[0]
	assert.Equal(t, "skillgate", sc.JobName, "the rules select job=\"skillgate\"")
	assert.Equal(t, metricsPath, sc.MetricsPath)
	require.NotEmpty(t, sc.StaticConfigs)
	for _, target := range sc.StaticConfigs[0].Targets {
		assert.Equal(t, defaultPort(t, "metrics-listen"), addrPort(t, target))
	}
}

// FuzzManifestParsers: the small text parsers the tests use never panic on
// any input and keep their invariants.
func FuzzManifestParsers(f *testing.F) {
	f.Add("      --listen string   framed (default \"127.0.0.1:7400\")\n  -h, --help  help\n")
	f.Add("[Service]\nExecStart=/bin/x \\\n  --config y\n# c\n")
	f.Add("FROM a AS b\nENV A=1 \\\n    B=2\nEXPOSE 7400 9400/tcp\nENTRYPOINT [\"x\", \"serve\"]\n")
	f.Add("\\\n\\")
	f.Fuzz(func(t *testing.T, text string) {
		for name, fl := range parseServeHelp(text) {
			if name != fl.Name || name == "help" || fl.Type == "" {
				t.Fatalf("bad flag %q: %+v", name, fl)
			}
		}
		for section, keys := range parseUnit(text) {
			for key := range keys {
				if strings.Contains(key, "=") || key != strings.TrimSpace(key) {
					t.Fatalf("bad unit key [%s] %q", section, key)
				}
			}
		}
		cf := parseContainerfile(text)
		_ = cf.env()
		_, _ = cf.exposed()
		for _, line := range logicalLines(text, "#") {
			if line == "" || strings.HasSuffix(line, "\\") && !strings.HasSuffix(line, " ") {
				t.Fatalf("logical line %q", line)
			}
		}
	})
}
