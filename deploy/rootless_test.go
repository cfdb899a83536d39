package deploy_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Files of the rootless variants.
const (
	rootlessDir        = "kubernetes-rootless"
	rootlessKustomize  = rootlessDir + "/kustomization.yaml"
	rootlessDeployment = rootlessDir + "/deployment-patch.yaml"
	rootlessNamespace  = rootlessDir + "/namespace-patch.yaml"
	rootlessSeccomp    = rootlessDir + "/seccomp-skillgate-rootless.json"
	rootlessAppArmor   = rootlessDir + "/apparmor-skillgate-rootless"
	rootlessUnitPath   = "systemd/skillgate-rootless.service"
)

// securityContext holds the fields of a pod's and a container's
// securityContext that the rootless variant sets.
type securityContext struct {
	Privileged               *bool  `yaml:"privileged"`
	RunAsUser                *int   `yaml:"runAsUser"`
	RunAsNonRoot             *bool  `yaml:"runAsNonRoot"`
	AllowPrivilegeEscalation *bool  `yaml:"allowPrivilegeEscalation"`
	ProcMount                string `yaml:"procMount"`
	Capabilities             struct {
		Drop []string `yaml:"drop"`
		Add  []string `yaml:"add"`
	} `yaml:"capabilities"`
	SeccompProfile *struct {
		Type             string `yaml:"type"`
		LocalhostProfile string `yaml:"localhostProfile"`
	} `yaml:"seccompProfile"`
	AppArmorProfile *struct {
		Type             string `yaml:"type"`
		LocalhostProfile string `yaml:"localhostProfile"`
	} `yaml:"appArmorProfile"`
}

type rootlessPatch struct {
	Metadata objectMeta `yaml:"metadata"`
	Spec     struct {
		Template struct {
			Spec struct {
				HostUsers       *bool           `yaml:"hostUsers"`
				SecurityContext securityContext `yaml:"securityContext"`
				Containers      []struct {
					Name            string          `yaml:"name"`
					Args            []string        `yaml:"args"`
					SecurityContext securityContext `yaml:"securityContext"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// TestRootlessKubernetesOverlay: the overlay builds on the base, runs the
// gateway non-root without privileges or capabilities, in rootless mode,
// and gives the pod exactly what that mode needs (its own user namespace,
// an unmasked /proc, the shipped seccomp and AppArmor profiles).
func TestRootlessKubernetesOverlay(t *testing.T) {
	var k struct {
		Resources []string `yaml:"resources"`
		Patches   []struct {
			Path string `yaml:"path"`
		} `yaml:"patches"`
	}
	loadYAML(t, rootlessKustomize, &k)
	assert.Equal(t, []string{"../kubernetes"}, k.Resources, "an overlay of the base manifests")
	var patches []string
	for _, p := range k.Patches {
		patches = append(patches, filepath.Join(rootlessDir, p.Path))
	}
	assert.ElementsMatch(t, []string{rootlessDeployment, rootlessNamespace}, patches)

	var d rootlessPatch
	loadOne(t, rootlessDeployment, "Deployment", "skillgate", &d)
	pod := d.Spec.Template.Spec
	require.NotNil(t, pod.HostUsers)
	assert.False(t, *pod.HostUsers, "a pod user namespace, which procMount: Unmasked requires")
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	var base deployment
	loadOne(t, k8sDeployment, "Deployment", "skillgate", &base)
	assert.Equal(t, base.Spec.Template.Spec.Containers[0].Name, c.Name, "the patch must name the base's container")
	assert.Contains(t, c.Args, "--sandbox-mode=rootless")
	assert.Subset(t, c.Args, base.Spec.Template.Spec.Containers[0].Args, "args replace the base's: keep them")

	for where, sc := range map[string]securityContext{"pod": pod.SecurityContext, "container": c.SecurityContext} {
		require.NotNil(t, sc.RunAsUser, where)
		assert.NotZero(t, *sc.RunAsUser, where)
		require.NotNil(t, sc.RunAsNonRoot, where)
		assert.True(t, *sc.RunAsNonRoot, where)
		require.NotNil(t, sc.SeccompProfile, where)
		assert.Equal(t, "Localhost", sc.SeccompProfile.Type, where)
		// Installed on the nodes as <kubelet root>/seccomp/profiles/skillgate-rootless.json.
		assert.Equal(t, "profiles/"+strings.TrimPrefix(filepath.Base(rootlessSeccomp), "seccomp-"), sc.SeccompProfile.LocalhostProfile, where)
	}
	sc := c.SecurityContext
	require.NotNil(t, sc.Privileged)
	assert.False(t, *sc.Privileged, "the point of the variant")
	require.NotNil(t, sc.AllowPrivilegeEscalation)
	assert.False(t, *sc.AllowPrivilegeEscalation)
	assert.Equal(t, []string{"ALL"}, sc.Capabilities.Drop)
	assert.Empty(t, sc.Capabilities.Add)
	assert.Equal(t, "Unmasked", sc.ProcMount, "the sandbox mounts a fresh /proc")
	aa := pod.SecurityContext.AppArmorProfile
	require.NotNil(t, aa)
	assert.Equal(t, "Localhost", aa.Type)
	assert.Contains(t, readFile(t, rootlessAppArmor), "profile "+aa.LocalhostProfile+" ")

	var ns struct {
		Metadata objectMeta `yaml:"metadata"`
	}
	loadOne(t, rootlessNamespace, "Namespace", "skillgate", &ns)
	assert.Equal(t, "restricted", ns.Metadata.Labels["pod-security.kubernetes.io/enforce"])
}

// TestRootlessSeccompProfile: the node profile parses, lets the gateway
// build its sandboxes and denies what neither it nor its set-up calls.
func TestRootlessSeccompProfile(t *testing.T) {
	var p struct {
		DefaultAction string `json:"defaultAction"`
		Syscalls      []struct {
			Names  []string          `json:"names"`
			Action string            `json:"action"`
			Args   []json.RawMessage `json:"args"`
		} `json:"syscalls"`
	}
	require.NoError(t, json.Unmarshal([]byte(readFile(t, rootlessSeccomp)), &p))
	assert.Equal(t, "SCMP_ACT_ALLOW", p.DefaultAction)
	denied := map[string]bool{}
	for _, s := range p.Syscalls {
		if strings.HasPrefix(s.Action, "SCMP_ACT_ERRNO") && len(s.Args) == 0 {
			for _, n := range s.Names {
				denied[n] = true
			}
		}
	}
	for _, need := range []string{"clone", "clone3", "unshare", "mount", "umount2", "pivot_root", "mount_setattr",
		"sethostname", "prlimit64", "prctl", "capset", "seccomp", "landlock_create_ruleset", "landlock_restrict_self"} {
		assert.False(t, denied[need], "the sandbox's set-up calls %s", need)
	}
	for _, never := range []string{"kexec_load", "init_module", "bpf", "ptrace", "io_uring_setup", "keyctl", "userfaultfd"} {
		assert.True(t, denied[never], "%s should be denied", never)
	}
}

// TestRootlessSystemdUnit: a dedicated user, no capabilities, rootless
// mode, the cgroup subtree delegated, and none of the hardening that
// breaks the sandbox.
func TestRootlessSystemdUnit(t *testing.T) {
	svc := parseUnit(readFile(t, rootlessUnitPath))["Service"]
	require.NotNil(t, svc)
	one := func(key string) string {
		require.Len(t, svc[key], 1, key)
		return svc[key][0]
	}
	user := one("User")
	assert.NotContains(t, []string{"", "root", "0"}, user)
	assert.Empty(t, one("CapabilityBoundingSet"), "no capability at all")
	assert.Empty(t, one("AmbientCapabilities"))
	assert.Empty(t, one("SupplementaryGroups"), "runs keep the gateway's groups: it has none")
	assert.Contains(t, one("ExecStart"), "--sandbox-mode rootless")
	assert.Contains(t, one("ExecStart"), "--config /etc/skillgate/skillgate.yaml")
	stop, err := time.ParseDuration(one("TimeoutStopSec"))
	require.NoError(t, err)
	drain, err := time.ParseDuration(configKeys(t, exampleConfig)["drain-timeout"])
	require.NoError(t, err)
	assert.Greater(t, stop, drain)
	for key, want := range map[string]string{"Delegate": "yes", "NoNewPrivileges": "yes", "KillMode": "mixed",
		"ProtectSystem": "strict", "RuntimeDirectoryMode": "0700"} {
		assert.Equal(t, want, one(key), key)
	}
	assert.Contains(t, svc["Environment"], "XDG_RUNTIME_DIR=/run/"+one("RuntimeDirectory"), "the sandbox's work dir is private to the user")
	for _, key := range []string{"DynamicUser", "PrivateUsers", "ProtectKernelTunables", "ProtectKernelLogs",
		"ProtectControlGroups", "ProtectHostname", "ProcSubset", "MemoryDenyWriteExecute"} {
		assert.NotContains(t, svc, key, "%s breaks the sandbox (see the unit's comments)", key)
	}
	for _, ns := range []string{"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"} {
		assert.Contains(t, strings.Fields(one("RestrictNamespaces")), ns)
	}
	for _, call := range []string{"@mount", "sethostname", "landlock_restrict_self"} {
		assert.Contains(t, strings.Fields(one("SystemCallFilter")), call)
	}
	for _, line := range svc["ExecStart"] {
		for _, u := range argFlags(strings.Fields(line), rootlessUnitPath) {
			assert.Contains(t, binaryFlags(t), u.flag)
		}
	}
}

// TestRootlessSystemdAnalyzeVerify lets systemd check the unit where
// systemd-analyze exists.
func TestRootlessSystemdAnalyzeVerify(t *testing.T) {
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed")
	}
	unit := strings.ReplaceAll(readFile(t, rootlessUnitPath), "/usr/local/bin/skillgate", gatewayBinary(t))
	// An existing user other than nobody (which systemd warns about).
	unit = strings.ReplaceAll(unit, "User=skillgate", "User=daemon")
	unit = strings.ReplaceAll(unit, "Group=skillgate", "Group=daemon")
	verifyUnit(t, tool, unit)
}

// TestRootlessKustomizeBuilds renders the overlay.
func TestRootlessKustomizeBuilds(t *testing.T) {
	out := kustomize(t, rootlessDir)
	assert.NotContains(t, out, "privileged: true")
	assert.Contains(t, out, "--sandbox-mode=rootless")
	assert.True(t, slices.Contains(strings.Split(out, "\n"), "    pod-security.kubernetes.io/enforce: restricted"))
}
