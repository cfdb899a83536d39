package deploy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// Typed views of the Kubernetes objects, only the fields the tests check.

type objectMeta struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels"`
}

type k8sObject struct {
	Kind     string     `yaml:"kind"`
	Metadata objectMeta `yaml:"metadata"`
	node     *yaml.Node
}

type labelSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

// intOrString is a port given by number or by name.
type intOrString string

func (v *intOrString) UnmarshalYAML(n *yaml.Node) error {
	*v = intOrString(n.Value)
	return nil
}

type probe struct {
	HTTPGet struct {
		Path string      `yaml:"path"`
		Port intOrString `yaml:"port"`
	} `yaml:"httpGet"`
}

type containerPort struct {
	Name          string `yaml:"name"`
	ContainerPort int    `yaml:"containerPort"`
}

type envVar struct {
	Name  string `yaml:"name"`
	Value string `yaml:"value"`
}

type volumeMount struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
}

type container struct {
	Name           string          `yaml:"name"`
	Image          string          `yaml:"image"`
	Args           []string        `yaml:"args"`
	Env            []envVar        `yaml:"env"`
	Ports          []containerPort `yaml:"ports"`
	LivenessProbe  *probe          `yaml:"livenessProbe"`
	ReadinessProbe *probe          `yaml:"readinessProbe"`
	StartupProbe   *probe          `yaml:"startupProbe"`
	Lifecycle      struct {
		PreStop struct {
			Sleep *struct {
				Seconds int `yaml:"seconds"`
			} `yaml:"sleep"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
	VolumeMounts []volumeMount `yaml:"volumeMounts"`
}

type volume struct {
	Name      string `yaml:"name"`
	ConfigMap *struct {
		Name string `yaml:"name"`
	} `yaml:"configMap"`
	Secret *struct {
		SecretName string `yaml:"secretName"`
	} `yaml:"secret"`
}

type deployment struct {
	Spec struct {
		Selector labelSelector `yaml:"selector"`
		Template struct {
			Metadata objectMeta `yaml:"metadata"`
			Spec     struct {
				TerminationGracePeriodSeconds int         `yaml:"terminationGracePeriodSeconds"`
				Containers                    []container `yaml:"containers"`
				Volumes                       []volume    `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type servicePort struct {
	Name       string      `yaml:"name"`
	Port       int         `yaml:"port"`
	TargetPort intOrString `yaml:"targetPort"`
}

type service struct {
	Spec struct {
		Selector map[string]string `yaml:"selector"`
		Ports    []servicePort     `yaml:"ports"`
	} `yaml:"spec"`
}

type serviceMonitor struct {
	Spec struct {
		JobLabel  string        `yaml:"jobLabel"`
		Selector  labelSelector `yaml:"selector"`
		Endpoints []struct {
			Port string `yaml:"port"`
			Path string `yaml:"path"`
		} `yaml:"endpoints"`
	} `yaml:"spec"`
}

type pdb struct {
	Spec struct {
		Selector labelSelector `yaml:"selector"`
	} `yaml:"spec"`
}

type kustomization struct {
	Namespace          string   `yaml:"namespace"`
	Resources          []string `yaml:"resources"`
	ConfigMapGenerator []struct {
		Name  string   `yaml:"name"`
		Files []string `yaml:"files"`
	} `yaml:"configMapGenerator"`
}

// loadObjects decodes every document of a manifest file.
func loadObjects(t testing.TB, path string) []k8sObject {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(readFile(t, path)))
	var objs []k8sObject
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return objs
		}
		require.NoError(t, err, path)
		var o k8sObject
		require.NoError(t, n.Decode(&o), path)
		o.node = &n
		objs = append(objs, o)
	}
}

// loadOne returns the object of kind (and name, when not empty) in path,
// decoded into out.
func loadOne(t testing.TB, path, kind, name string, out any) {
	t.Helper()
	for _, o := range loadObjects(t, path) {
		if o.Kind == kind && (name == "" || o.Metadata.Name == name) {
			require.NoError(t, o.node.Decode(out), path)
			return
		}
	}
	t.Fatalf("%s: no %s %q", path, kind, name)
}

func loadYAML(t testing.TB, path string, out any) {
	t.Helper()
	require.NoError(t, yaml.Unmarshal([]byte(readFile(t, path)), out), path)
}

// configKeys decodes a skillgate config file into its keys and values, the
// values as the strings a flag would be given.
func configKeys(t testing.TB, path string) map[string]string {
	t.Helper()
	var raw map[string]any
	loadYAML(t, path, &raw)
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		out[k] = scalarString(v)
	}
	return out
}

func scalarString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

// unitFile is a systemd unit: section -> key -> values in order.
type unitFile map[string]map[string][]string

// parseUnit reads a systemd unit file, joining continuation lines.
func parseUnit(text string) unitFile {
	u := unitFile{}
	section := ""
	for _, line := range logicalLines(text, "#;") {
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = strings.Trim(line, "[]")
			u[section] = map[string][]string{}
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if ok && section != "" {
			u[section][strings.TrimSpace(k)] = append(u[section][strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	return u
}

// logicalLines drops blank and comment lines and joins lines that end in a
// backslash with the next one.
func logicalLines(text, comments string) []string {
	var out []string
	var cur strings.Builder
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.ContainsAny(line[:1], comments) {
			continue
		}
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(line)
		out = append(out, cur.String())
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// containerfile is the parsed Containerfile: instruction -> arguments, one
// entry per occurrence, continuation lines joined.
type containerfile map[string][]string

func parseContainerfile(text string) containerfile {
	cf := containerfile{}
	for _, line := range logicalLines(text, "#") {
		instr, args, _ := strings.Cut(line, " ")
		instr = strings.ToUpper(instr)
		cf[instr] = append(cf[instr], strings.TrimSpace(args))
	}
	return cf
}

// env returns the variables the ENV instructions set (KEY=VALUE form).
func (cf containerfile) env() map[string]string {
	out := map[string]string{}
	for _, args := range cf["ENV"] {
		for _, f := range strings.Fields(args) {
			if k, v, ok := strings.Cut(f, "="); ok {
				out[k] = v
			}
		}
	}
	return out
}

// exposed returns the EXPOSE ports.
func (cf containerfile) exposed() ([]int, error) {
	var ports []int
	for _, args := range cf["EXPOSE"] {
		for _, f := range strings.Fields(args) {
			p, err := strconv.Atoi(strings.TrimSuffix(f, "/tcp"))
			if err != nil {
				return nil, err
			}
			ports = append(ports, p)
		}
	}
	return ports, nil
}

// execForm decodes an instruction's JSON array (exec form).
func execForm(args string) ([]string, error) {
	var argv []string
	err := json.NewDecoder(bytes.NewReader([]byte(args))).Decode(&argv)
	return argv, err
}
