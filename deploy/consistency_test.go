package deploy_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Files of deploy/ that set flags of "skillgate serve".
const (
	exampleConfig  = "config/skillgate.example.yaml"
	k8sConfig      = "kubernetes/skillgate.yaml"
	k8sDeployment  = "kubernetes/deployment.yaml"
	k8sServices    = "kubernetes/service.yaml"
	k8sMonitor     = "kubernetes/servicemonitor.yaml"
	k8sPDB         = "kubernetes/pdb.yaml"
	k8sKustomize   = "kubernetes/kustomization.yaml"
	unitPath       = "systemd/skillgate.service"
	unitEnvPath    = "systemd/skillgate.env"
	containerPath  = "container/Containerfile"
	scrapeExample  = "prometheus/prometheus.example.yml"
	skillsInImage  = "/srv/skillgate/skills"
	pythonInImage  = "/usr/bin/python3"
	healthPath     = "/healthz"
	readyPath      = "/readyz"
	metricsPath    = "/metrics"
	configFlagName = "config"
)

// flagUse is one place in deploy/ that names a flag.
type flagUse struct{ flag, where string }

// TestDeployUsesOnlyRealFlags checks every flag that deploy/ sets (command
// lines, SKILLGATE_* variables, config file keys) against the binary's own
// flag list. A failure lists the flags the binary lacks.
func TestDeployUsesOnlyRealFlags(t *testing.T) {
	flags := binaryFlags(t)
	missing := map[string][]string{}
	for _, u := range flagUses(t) {
		if _, ok := flags[u.flag]; !ok {
			missing[u.flag] = append(missing[u.flag], u.where)
		}
	}
	var lines []string
	for f, where := range missing {
		slices.Sort(where)
		lines = append(lines, fmt.Sprintf("--%s (%s)", f, strings.Join(slices.Compact(where), ", ")))
	}
	slices.Sort(lines)
	if len(lines) > 0 {
		t.Errorf("deploy/ sets flags that \"skillgate serve\" does not have:\n  %s", strings.Join(lines, "\n  "))
	}
}

// flagUses collects every flag deploy/ sets, with where it does.
func flagUses(t *testing.T) []flagUse {
	var uses []flagUse
	for _, path := range []string{exampleConfig, k8sConfig} {
		for k := range configKeys(t, path) {
			uses = append(uses, flagUse{k, path + " key"})
		}
	}
	var d deployment
	loadOne(t, k8sDeployment, "Deployment", "skillgate", &d)
	for _, c := range d.Spec.Template.Spec.Containers {
		uses = append(uses, argFlags(c.Args, k8sDeployment+" args")...)
		for _, e := range c.Env {
			if f, ok := envFlag(e.Name); ok {
				uses = append(uses, flagUse{f, k8sDeployment + " env " + e.Name})
			}
		}
	}
	unit := parseUnit(readFile(t, unitPath))
	for _, line := range unit["Service"]["ExecStart"] {
		uses = append(uses, argFlags(strings.Fields(line), unitPath+" ExecStart")...)
	}
	uses = append(uses, envFileFlags(readFile(t, unitEnvPath), unitEnvPath)...)
	cf := parseContainerfile(readFile(t, containerPath))
	for k := range cf.env() {
		if f, ok := envFlag(k); ok {
			uses = append(uses, flagUse{f, containerPath + " ENV " + k})
		}
	}
	for _, e := range cf["ENTRYPOINT"] {
		argv, err := execForm(e)
		require.NoError(t, err, "ENTRYPOINT must be in exec form")
		uses = append(uses, argFlags(argv, containerPath+" ENTRYPOINT")...)
	}
	return uses
}

// argFlags picks --name and --name=value out of a command line.
func argFlags(args []string, where string) []flagUse {
	var uses []flagUse
	for _, a := range args {
		if name, ok := strings.CutPrefix(a, "--"); ok && name != "" {
			name, _, _ = strings.Cut(name, "=")
			uses = append(uses, flagUse{name, where})
		}
	}
	return uses
}

// envFileFlags reads SKILLGATE_* assignments of an environment file,
// commented-out examples included: they are documentation of real flags.
func envFileFlags(text, where string) []flagUse {
	var uses []flagUse
	for _, line := range strings.Split(text, "\n") {
		k, _, ok := strings.Cut(strings.TrimLeft(strings.TrimSpace(line), "#"), "=")
		if f, isFlag := envFlag(strings.TrimSpace(k)); ok && isFlag {
			uses = append(uses, flagUse{f, where + " " + strings.TrimSpace(k)})
		}
	}
	return uses
}

// TestExampleConfigNamesEveryFlag keeps the example config complete: a new
// flag of the binary must be documented there.
func TestExampleConfigNamesEveryFlag(t *testing.T) {
	keys := configKeys(t, exampleConfig)
	var absent []string
	for name := range binaryFlags(t) {
		if _, ok := keys[name]; !ok && name != configFlagName {
			absent = append(absent, name)
		}
	}
	slices.Sort(absent)
	assert.Empty(t, absent, "%s lacks these flags of \"skillgate serve\"", exampleConfig)
	assert.NotContains(t, keys, configFlagName, "a config file cannot name another config file")
}

// TestConfigValuesParse checks each value of the config files against the
// flag's type, as the binary would parse it.
func TestConfigValuesParse(t *testing.T) {
	flags := binaryFlags(t)
	for _, path := range []string{exampleConfig, k8sConfig} {
		for k, v := range configKeys(t, path) {
			f, ok := flags[k]
			if !ok {
				continue // reported by TestDeployUsesOnlyRealFlags
			}
			assert.NoError(t, checkFlagValue(f, v), "%s: %s: %q", path, k, v)
		}
	}
}

func checkFlagValue(f serveFlag, v string) error {
	var err error
	switch f.Type {
	case "duration":
		_, err = time.ParseDuration(v)
	case "int", "int64", "uint", "uint64":
		_, err = strconv.ParseInt(v, 10, 64)
	case "float64", "float32":
		_, err = strconv.ParseFloat(v, 64)
	case "bool":
		_, err = strconv.ParseBool(v)
	}
	if err == nil && strings.HasSuffix(f.Name, "listen") && v != "" {
		_, _, err = net.SplitHostPort(v)
	}
	return err
}

// defaultPort is the port of a listen flag's default address.
func defaultPort(t *testing.T, flag string) int {
	t.Helper()
	f, ok := binaryFlags(t)[flag]
	require.True(t, ok, "the binary has no --%s", flag)
	return addrPort(t, f.Default)
}

func addrPort(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err, addr)
	n, err := strconv.Atoi(p)
	require.NoError(t, err, addr)
	return n
}

// TestListenPortsMatchDefaults: the manifests keep the binary's default
// ports, so that clients and scrapers find the same ports everywhere.
func TestListenPortsMatchDefaults(t *testing.T) {
	cfg := configKeys(t, k8sConfig)
	for _, flag := range []string{"listen", "http-listen", "metrics-listen"} {
		want := defaultPort(t, flag)
		assert.Equal(t, want, addrPort(t, cfg[flag]), "%s: %s", k8sConfig, flag)
		assert.Equal(t, want, addrPort(t, configKeys(t, exampleConfig)[flag]), "%s: %s", exampleConfig, flag)
	}
}

// TestDeploymentMatchesConfig ties container ports, probes, volumes and the
// grace period to the gateway's config.
func TestDeploymentMatchesConfig(t *testing.T) {
	cfg := configKeys(t, k8sConfig)
	c := gatewayContainer(t)
	ports := map[string]int{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for name, flag := range map[string]string{"framed": "listen", "tls": "tls-listen", "http": "http-listen", "metrics": "metrics-listen"} {
		assert.Equal(t, addrPort(t, cfg[flag]), ports[name], "container port %q must be the port of %s", name, flag)
	}
	require.NotNil(t, c.LivenessProbe)
	require.NotNil(t, c.ReadinessProbe)
	assert.Equal(t, healthPath, c.LivenessProbe.HTTPGet.Path)
	assert.Equal(t, readyPath, c.ReadinessProbe.HTTPGet.Path)
	for _, p := range []*probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p != nil {
			assert.Equal(t, ports["metrics"], resolvePort(t, p.HTTPGet.Port, ports), "probes go to the metrics listener")
		}
	}
	checkGracePeriod(t, c, cfg)
	checkMounts(t, c, cfg)
}

func gatewayContainer(t *testing.T) container {
	t.Helper()
	var d deployment
	loadOne(t, k8sDeployment, "Deployment", "skillgate", &d)
	require.Len(t, d.Spec.Template.Spec.Containers, 1)
	return d.Spec.Template.Spec.Containers[0]
}

func resolvePort(t *testing.T, p intOrString, named map[string]int) int {
	t.Helper()
	if n, err := strconv.Atoi(string(p)); err == nil {
		return n
	}
	n, ok := named[string(p)]
	require.True(t, ok, "no container port named %q", p)
	return n
}

// checkGracePeriod: the kubelet must not kill the gateway while it drains.
func checkGracePeriod(t *testing.T, c container, cfg map[string]string) {
	var d deployment
	loadOne(t, k8sDeployment, "Deployment", "skillgate", &d)
	drain, err := time.ParseDuration(cfg["drain-timeout"])
	require.NoError(t, err, "%s must set drain-timeout", k8sConfig)
	preStop := time.Duration(0)
	if s := c.Lifecycle.PreStop.Sleep; s != nil {
		preStop = time.Duration(s.Seconds) * time.Second
	}
	grace := time.Duration(d.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	assert.Greater(t, grace, preStop+drain, "terminationGracePeriodSeconds must exceed preStop sleep + drain-timeout")
}

// checkMounts: every file the config names is on a volume, and --config
// points at the ConfigMap's mount.
func checkMounts(t *testing.T, c container, cfg map[string]string) {
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	under := func(path, vol string) {
		assert.True(t, strings.HasPrefix(path, mounts[vol]+"/"), "%s should be on volume %q (%s)", path, vol, mounts[vol])
	}
	var configArg string
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--"+configFlagName+"="); ok {
			configArg = v
		}
	}
	require.NotEmpty(t, configArg, "the container must pass --config=PATH")
	under(configArg, "config")
	assert.Equal(t, filepath.Base(k8sConfig), filepath.Base(configArg))
	under(cfg["auth-file"], "auth")
	under(cfg["tls-cert"], "tls")
	under(cfg["tls-key"], "tls")
	assert.Equal(t, mounts["data"], cfg["data-dir"])
	assert.Equal(t, skillsInImage, cfg["skills-dir"], "skills come from the image")
	assert.Equal(t, pythonInImage, cfg["python"])
}

// TestServicesReachTheGateway: selectors select the pod, target ports name
// container ports, and service ports equal container ports.
func TestServicesReachTheGateway(t *testing.T) {
	var d deployment
	loadOne(t, k8sDeployment, "Deployment", "skillgate", &d)
	podLabels := d.Spec.Template.Metadata.Labels
	assert.Subset(t, podLabels, d.Spec.Selector.MatchLabels, "Deployment selector")
	named := map[string]int{}
	for _, p := range gatewayContainer(t).Ports {
		named[p.Name] = p.ContainerPort
	}
	servicePorts := map[string]bool{}
	for _, o := range loadObjects(t, k8sServices) {
		var s service
		require.NoError(t, o.node.Decode(&s))
		assert.Subset(t, podLabels, s.Spec.Selector, "Service %s selector", o.Metadata.Name)
		for _, p := range s.Spec.Ports {
			assert.Equal(t, resolvePort(t, p.TargetPort, named), p.Port, "Service %s port %s", o.Metadata.Name, p.Name)
			servicePorts[p.Name] = true
		}
	}
	for name := range named {
		assert.True(t, servicePorts[name], "container port %q has no Service port", name)
	}
	var b pdb
	loadOne(t, k8sPDB, "PodDisruptionBudget", "", &b)
	assert.Subset(t, podLabels, b.Spec.Selector.MatchLabels, "PodDisruptionBudget selector")
}

// TestServiceMonitorScrapesMetrics: the ServiceMonitor selects the metrics
// Service, uses its port, and makes the job "skillgate" the rules expect.
func TestServiceMonitorScrapesMetrics(t *testing.T) {
	var sm serviceMonitor
	loadOne(t, k8sMonitor, "ServiceMonitor", "", &sm)
	var matched []string
	for _, o := range loadObjects(t, k8sServices) {
		if !isSubset(sm.Spec.Selector.MatchLabels, o.Metadata.Labels) {
			continue
		}
		matched = append(matched, o.Metadata.Name)
		assert.Equal(t, "skillgate", o.Metadata.Labels[sm.Spec.JobLabel], "jobLabel must yield job=\"skillgate\"")
		var s service
		require.NoError(t, o.node.Decode(&s))
		require.NotEmpty(t, sm.Spec.Endpoints)
		for _, e := range sm.Spec.Endpoints {
			assert.True(t, slices.ContainsFunc(s.Spec.Ports, func(p servicePort) bool {
				return p.Name == e.Port && p.TargetPort == "metrics"
			}), "endpoint port %q must be the metrics port of Service %s", e.Port, o.Metadata.Name)
			assert.Equal(t, metricsPath, e.Path)
		}
	}
	assert.Len(t, matched, 1, "the ServiceMonitor must select exactly the metrics Service")
}

func isSubset(sub, super map[string]string) bool {
	for k, v := range sub {
		if super[k] != v {
			return false
		}
	}
	return len(sub) > 0
}

// TestKustomizationListsEveryManifest: nothing in kubernetes/ is forgotten,
// and the ConfigMap the Deployment mounts is the generated one.
func TestKustomizationListsEveryManifest(t *testing.T) {
	var k kustomization
	loadYAML(t, k8sKustomize, &k)
	listed := map[string]bool{}
	for _, r := range k.Resources {
		listed[r] = true
		_, err := os.Stat(filepath.Join("kubernetes", r))
		assert.NoError(t, err, "resource %s", r)
	}
	require.Len(t, k.ConfigMapGenerator, 1)
	gen := k.ConfigMapGenerator[0]
	assert.Equal(t, []string{filepath.Base(k8sConfig)}, gen.Files)
	for _, f := range gen.Files {
		listed[f] = true
	}
	entries, err := os.ReadDir("kubernetes")
	require.NoError(t, err)
	for _, e := range entries {
		if e.Name() != filepath.Base(k8sKustomize) && strings.HasSuffix(e.Name(), ".yaml") {
			assert.True(t, listed[e.Name()], "kubernetes/%s is not in kustomization.yaml", e.Name())
		}
	}
	var d deployment
	loadOne(t, k8sDeployment, "Deployment", "skillgate", &d)
	assert.True(t, slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v volume) bool {
		return v.ConfigMap != nil && v.ConfigMap.Name == gen.Name
	}), "the Deployment must mount ConfigMap %s", gen.Name)
}

// TestProbePathsServed asks the running gateway for what the probes, the
// HEALTHCHECK and the scrapers ask for.
func TestProbePathsServed(t *testing.T) {
	g := startGateway(t)
	for _, path := range []string{healthPath, readyPath, metricsPath} {
		code, body := httpGet("http://" + g.addr("metrics") + path)
		assert.Equal(t, 200, code, "GET %s: %s", path, body)
	}
}
