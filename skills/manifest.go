package skills

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/skillgate/skillgate/egress/hostpattern"
	"github.com/skillgate/skillgate/internal/pyname"
	"github.com/skillgate/skillgate/pyenv"
)

const (
	manifestFile = "skill.toml"
	skillMDFile  = "SKILL.md"
	// maxDescriptionLen bounds a one-line description.
	maxDescriptionLen = 1024
	// requirementsFile beside skill.toml adds to [runtime] requirements,
	// in pip's requirements-file format.
	requirementsFile = "requirements.txt"
	// maxPreload bounds a preload list: each module costs template memory.
	maxPreload = 32
)

// Kind says whether a skill can be executed.
type Kind string

// The two kinds of skills.
const (
	KindAction      Kind = "action"      // has a [runtime]; execute_skill runs it
	KindInstruction Kind = "instruction" // documentation only
)

// Runtime is the [runtime] table of an action skill.
type Runtime struct {
	Language   string `json:"language"`
	Entrypoint string `json:"entrypoint"`
	Export     string `json:"export"`
	// TimeoutMS is the default run timeout; 0 means the gateway default.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// CPUs is the CPU share a run of the skill asks for (1.5 CPUs); the
	// gateway's --run-cpus caps it. 0 means the gateway's share.
	CPUs float64 `json:"cpus,omitempty"`
	// ArgsSchema is the package path of a JSON Schema of the args, checked
	// before any run; OutputSchema of the output. Both optional.
	ArgsSchema   string `json:"args_schema,omitempty"`
	OutputSchema string `json:"output_schema,omitempty"`
	// Requirements are PEP 508 strings the skill's environment installs
	// (as written; Skill.Requirements has them parsed, a requirements.txt
	// beside skill.toml included).
	Requirements []string `json:"requirements,omitempty"`
	// Preload names modules the template of the skill's runs imports
	// ahead of them.
	Preload []string `json:"preload,omitempty"`
}

// Permissions is the [permissions] table.
type Permissions struct {
	// Secrets names environment variables passed from the gateway's
	// environment into the skill's sandbox. Never nil in a loaded skill.
	Secrets []string `json:"secrets"`
	// Network lists the destinations the skill may reach, as host:port or
	// *.domain:port; empty means no network. The operator's and the
	// caller's rules narrow it further.
	Network []string `json:"network,omitempty"`
}

// Manifest is the machine-readable description of a skill: the contents of
// skill.toml, or the equivalent derived from an Agent Skills SKILL.md.
type Manifest struct {
	Name        string      `json:"name"`
	Version     string      `json:"version"`
	Description string      `json:"description"`
	Kind        Kind        `json:"kind"`
	Runtime     *Runtime    `json:"runtime,omitempty"`
	Permissions Permissions `json:"permissions"`
}

var (
	manifestKeys    = []string{"name", "version", "description", "kind", "runtime", "permissions"}
	runtimeKeys     = []string{"language", "entrypoint", "export", "timeout_ms", "cpus", "args_schema", "output_schema", "requirements", "preload"}
	permissionsKeys = []string{"secrets", "network"}
)

// ParseManifest decodes skill.toml and checks every rule that needs no
// other file: it returns the manifest (fields that failed are left empty)
// and all violations found, never only the first. Unknown keys are
// violations. Whether the entrypoint exists is checked by the loader.
func ParseManifest(data []byte) (Manifest, []Violation) {
	return parseManifest(data, false)
}

// parseManifest is ParseManifest; allowReserved admits the reserved
// namespace (built-in skills only).
func parseManifest(data []byte, allowReserved bool) (Manifest, []Violation) {
	c := &collector{file: manifestFile}
	var raw map[string]any
	if err := toml.Unmarshal(data, &raw); err != nil {
		c.add("", "a TOML document", nil, "%s", tomlErrorText(err))
		return Manifest{}, c.list
	}
	m := parseManifestTable(c, raw, allowReserved)
	return m, c.list
}

func parseManifestTable(c *collector, raw map[string]any, allowReserved bool) Manifest {
	unknownKeys(c, "", raw, manifestKeys)
	m := Manifest{Permissions: Permissions{Secrets: []string{}}}
	m.Name = checkName(c, raw, allowReserved)
	m.Version = checkVersion(c, raw)
	m.Description = checkDescription(c, raw)
	kind, _ := requiredString(c, raw, "", "kind", `one of "action", "instruction"`)
	switch Kind(kind) {
	case KindAction, KindInstruction:
		m.Kind = Kind(kind)
	case "":
	default:
		c.add("/kind", `one of "action", "instruction"`, kind, "unknown kind")
	}
	m.Runtime = checkRuntime(c, raw, m.Kind)
	m.Permissions.Secrets = checkSecrets(c, raw)
	m.Permissions.Network = checkNetwork(c, raw)
	return m
}

func tomlErrorText(err error) string {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		return fmt.Sprintf("TOML syntax error at line %d, column %d: %v", row, col, de)
	}
	return "TOML syntax error: " + err.Error()
}

func unknownKeys(c *collector, ptr string, tbl map[string]any, allowed []string) {
	keys := make([]string, 0, len(tbl))
	for k := range tbl {
		if !slices.Contains(allowed, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		c.add(pointer(ptr, k), "no such field (known: "+strings.Join(allowed, ", ")+")", tbl[k], "unknown field")
	}
}

// requiredString fetches tbl[key] as a non-empty string, reporting a
// missing, mistyped or empty value.
func requiredString(c *collector, tbl map[string]any, ptr, key, expected string) (string, bool) {
	p := pointer(ptr, key)
	v, ok := tbl[key]
	if !ok {
		c.add(p, expected, nil, "required field is missing")
		return "", false
	}
	s, ok := v.(string)
	if !ok {
		c.add(p, "a string: "+expected, v, "wrong type")
		return "", false
	}
	if strings.TrimSpace(s) == "" {
		c.add(p, expected, s, "must not be empty")
		return "", false
	}
	return s, true
}

func checkName(c *collector, raw map[string]any, allowReserved bool) string {
	const expected = "dotted lowercase name like namespace.domain.action"
	name, ok := requiredString(c, raw, "", "name", expected)
	if !ok {
		return ""
	}
	if err := ValidateSkillName(name); err != nil {
		c.add("/name", expected, name, "invalid name: %v", err)
		return ""
	}
	if !allowReserved && namespaceOf(name) == ReservedNamespace {
		c.add("/name", "a namespace other than "+ReservedNamespace, name,
			"namespace %q is reserved for built-in skills", ReservedNamespace)
		return ""
	}
	return name
}

func checkVersion(c *collector, raw map[string]any) string {
	const expected = "semantic version 2.0.0 like 1.2.3 or 1.0.0-beta.1"
	v, ok := requiredString(c, raw, "", "version", expected)
	if !ok {
		return ""
	}
	if _, err := ParseVersion(v); err != nil {
		c.add("/version", expected, v, "invalid version: %v", err)
		return ""
	}
	return v
}

func checkDescription(c *collector, raw map[string]any) string {
	const expected = "one non-empty line of at most 1024 characters"
	d, ok := requiredString(c, raw, "", "description", expected)
	if !ok {
		return ""
	}
	if strings.ContainsAny(d, "\r\n") || len(d) > maxDescriptionLen {
		c.add("/description", expected, d, "description must be a single line of at most %d characters", maxDescriptionLen)
		return ""
	}
	return strings.TrimSpace(d)
}

// checkRuntime enforces: action skills have a valid [runtime], instruction
// skills have none.
func checkRuntime(c *collector, raw map[string]any, kind Kind) *Runtime {
	v, present := raw["runtime"]
	switch {
	case kind == KindInstruction && present:
		c.add("/runtime", "no [runtime] table for an instruction skill", v, "instruction skills cannot be executed")
		return nil
	case kind == KindAction && !present:
		c.add("/runtime", "a [runtime] table with language, entrypoint and export", nil, "action skills need a runtime")
		return nil
	case !present:
		return nil
	}
	tbl, ok := v.(map[string]any)
	if !ok {
		c.add("/runtime", "a table", v, "wrong type")
		return nil
	}
	unknownKeys(c, "/runtime", tbl, runtimeKeys)
	rt := &Runtime{}
	if lang, ok := requiredString(c, tbl, "/runtime", "language", `"python"`); ok {
		if lang != "python" {
			c.add("/runtime/language", `"python"`, lang, "unsupported language")
		}
		rt.Language = lang
	}
	rt.Entrypoint = checkEntrypoint(c, tbl)
	if exp, ok := requiredString(c, tbl, "/runtime", "export", "a Python identifier like main"); ok {
		if !pyname.IsIdentifier(exp) {
			c.add("/runtime/export", "a Python identifier like main", exp, "not a Python identifier")
		}
		rt.Export = exp
	}
	rt.TimeoutMS = checkTimeout(c, tbl)
	rt.CPUs = checkCPUs(c, tbl)
	rt.ArgsSchema = checkSchemaPath(c, tbl, "args_schema")
	rt.OutputSchema = checkSchemaPath(c, tbl, "output_schema")
	rt.Requirements = checkRequirements(c, tbl)
	rt.Preload = checkPreload(c, tbl)
	return rt
}

// checkRequirements parses [runtime] requirements, each a PEP 508 string
// naming a distribution of the gateway's package sources.
func checkRequirements(c *collector, tbl map[string]any) []string {
	const expected = `PEP 508 requirement strings like "pypdf==6.16.1" or "python-dateutil>=2.8"`
	v, ok := tbl["requirements"]
	if !ok {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		c.add("/runtime/requirements", "an array of "+expected, v, "wrong type")
		return nil
	}
	if len(list) > pyenv.MaxRequirements {
		c.add("/runtime/requirements", fmt.Sprintf("at most %d requirements", pyenv.MaxRequirements), len(list), "too many requirements")
		return nil
	}
	var out []string
	seen := map[string]int{}
	for i, e := range list {
		p := fmt.Sprintf("/runtime/requirements/%d", i)
		s, ok := e.(string)
		if !ok {
			c.add(p, expected, e, "wrong type")
			continue
		}
		r, err := pyenv.ParseRequirement(s)
		if err != nil {
			c.add(p, expected, s, "invalid requirement: %v", err)
			continue
		}
		if j, dup := seen[r.Key()]; dup {
			c.add(p, "each distribution required once", s, "%s is already required by /runtime/requirements/%d", r.Key(), j)
			continue
		}
		seen[r.Key()] = i
		out = append(out, s)
	}
	return out
}

// checkPreload wants dotted module names.
func checkPreload(c *collector, tbl map[string]any) []string {
	const expected = `Python module names like "pandas" or "dateutil.parser"`
	v, ok := tbl["preload"]
	if !ok {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		c.add("/runtime/preload", "an array of "+expected, v, "wrong type")
		return nil
	}
	var out []string
	for i, e := range list {
		s, ok := e.(string)
		if !ok || !pyenv.ValidModuleName(s) {
			c.add(fmt.Sprintf("/runtime/preload/%d", i), expected, e, "not a module name")
			continue
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) > maxPreload {
		c.add("/runtime/preload", fmt.Sprintf("at most %d modules", maxPreload), len(out), "too many modules to preload")
		return nil
	}
	return out
}

// checkEntrypoint wants a clean relative slash path to a .py file whose
// directories and stem are Python identifiers, since the sandbox imports it
// as a module of the mounted skill package (code/main.py -> <pkg>.code.main).
func checkEntrypoint(c *collector, tbl map[string]any) string {
	const expected = "relative path of a .py file inside the package, like code/main.py"
	ep, ok := requiredString(c, tbl, "/runtime", "entrypoint", expected)
	if !ok {
		return ""
	}
	if strings.ContainsAny(ep, "\\\x00") || !fs.ValidPath(ep) || ep == "." {
		c.add("/runtime/entrypoint", expected, ep, "not a clean relative path inside the package")
		return ""
	}
	if path.Ext(ep) != ".py" {
		c.add("/runtime/entrypoint", expected, ep, "entrypoint must be a .py file")
		return ""
	}
	for seg := range strings.SplitSeq(strings.TrimSuffix(ep, ".py"), "/") {
		if !pyname.IsIdentifier(seg) {
			c.add("/runtime/entrypoint", expected, ep, "path segment %q is not importable as a Python module name", seg)
			return ""
		}
	}
	return ep
}

func checkTimeout(c *collector, tbl map[string]any) int64 {
	v, ok := tbl["timeout_ms"]
	if !ok {
		return 0
	}
	n, ok := v.(int64)
	if !ok || n <= 0 {
		c.add("/runtime/timeout_ms", "a positive integer (milliseconds)", v, "invalid timeout")
		return 0
	}
	return n
}

// The CPU shares a skill may ask for: what a cgroup's quota can express
// (1 ms per 100 ms period) up to a bound no machine reaches.
const (
	minCPUs = 0.01
	maxCPUs = 1024
)

func checkCPUs(c *collector, tbl map[string]any) float64 {
	v, ok := tbl["cpus"]
	if !ok {
		return 0
	}
	var n float64
	switch x := v.(type) {
	case int64:
		n = float64(x)
	case float64:
		n = x
	default:
		n = -1
	}
	if !(n >= minCPUs && n <= maxCPUs) {
		c.add("/runtime/cpus", "a number of CPUs from 0.01 to 1024, like 0.5 or 2", v, "invalid CPU share")
		return 0
	}
	return n
}

func checkSecrets(c *collector, raw map[string]any) []string {
	out := []string{}
	v, ok := raw["permissions"]
	if !ok {
		return out
	}
	tbl, ok := v.(map[string]any)
	if !ok {
		c.add("/permissions", "a table", v, "wrong type")
		return out
	}
	unknownKeys(c, "/permissions", tbl, permissionsKeys)
	sv, ok := tbl["secrets"]
	if !ok {
		return out
	}
	list, ok := sv.([]any)
	if !ok {
		c.add("/permissions/secrets", "an array of environment variable names", sv, "wrong type")
		return out
	}
	for i, e := range list {
		p := fmt.Sprintf("/permissions/secrets/%d", i)
		s, ok := e.(string)
		switch {
		case !ok || !isEnvVarName(s):
			c.add(p, "an environment variable name matching [A-Z_][A-Z0-9_]*", e, "invalid secret name")
		case slices.Contains(out, s):
			c.add(p, "each secret listed once", s, "duplicate secret")
		default:
			out = append(out, s)
		}
	}
	return out
}

// checkNetwork validates [permissions] network: the table's own shape was
// reported by checkSecrets.
func checkNetwork(c *collector, raw map[string]any) []string {
	tbl, _ := raw["permissions"].(map[string]any)
	nv, ok := tbl["network"]
	if !ok {
		return nil
	}
	list, ok := nv.([]any)
	if !ok {
		c.add("/permissions/network", "an array of host:port patterns", nv, "wrong type")
		return nil
	}
	var out []string
	for i, e := range list {
		p := fmt.Sprintf("/permissions/network/%d", i)
		s, ok := e.(string)
		if !ok {
			c.add(p, "a host:port pattern such as \"api.example.com:443\" or \"*.example.com:443\"", e, "wrong type")
			continue
		}
		if _, err := hostpattern.Parse(s); err != nil || s == "*" {
			c.add(p, "a host:port pattern such as \"api.example.com:443\" or \"*.example.com:443\"", s, "invalid network pattern")
			continue
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
