package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// outputBlobsDir is where the runtime writes output blobs, under
// /workspace.
const outputBlobsDir = ".blobs"

// plan is a validated job: what to write into the job directory and the
// message the runtime receives.
type plan struct {
	job     Job
	timeout time.Duration
	cpus    float64 // the run's CPU share: Job.CPUs capped by Config.CPUs
	msg     jobMessage
}

// jobMessage is the job as the Python runtime reads it from its job pipe.
type jobMessage struct {
	RunID        string            `json:"run_id"`
	Code         string            `json:"code,omitempty"`
	Language     string            `json:"language,omitempty"`
	Network      bool              `json:"network,omitempty"` // the run has egress
	Skill        string            `json:"skill,omitempty"`
	Module       string            `json:"module,omitempty"`
	Entrypoint   string            `json:"entrypoint"`
	Args         json.RawMessage   `json:"args"`
	Skills       []skillMessage    `json:"skills"`
	Inputs       []inputMessage    `json:"inputs"`
	Outputs      []string          `json:"outputs"`
	Env          map[string]string `json:"env"`
	PythonPath   []string          `json:"python_path,omitempty"` // the environment's directories, first wins
	CPUSeconds   int64             `json:"cpu_seconds"`
	MaxBlobBytes int64             `json:"max_blob_bytes"`
}

type skillMessage struct {
	Name   string `json:"name"`
	Root   string `json:"root"`
	Entry  string `json:"entry,omitempty"`
	Export string `json:"export,omitempty"`
}

type inputMessage struct {
	ID   string `json:"id"`
	Path string `json:"path"`
}

// newPlan validates job against cfg.
func newPlan(cfg Config, job Job) (*plan, error) {
	p := &plan{job: job}
	if err := p.checkBasics(cfg); err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalidJob, err)
	}
	if err := p.checkSkills(); err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalidJob, err)
	}
	if err := p.checkEntry(); err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalidJob, err)
	}
	if err := p.checkBlobs(cfg); err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalidJob, err)
	}
	p.msg.CPUSeconds = cpuSeconds(cfg.CPUTime, p.timeout)
	p.msg.MaxBlobBytes = cfg.MaxOutputBlobBytes
	return p, nil
}

func (p *plan) checkBasics(cfg Config) error {
	job := p.job
	if len(job.RunID) > maxRunIDLen || !printableASCII(job.RunID) {
		return fmt.Errorf("run id must be at most %d printable ASCII bytes", maxRunIDLen)
	}
	switch {
	case job.Timeout < 0:
		return fmt.Errorf("negative timeout")
	case job.Timeout == 0:
		p.timeout = cfg.DefaultTimeout
	default:
		p.timeout = min(job.Timeout, cfg.MaxTimeout)
	}
	if !validCPUs(job.CPUs) {
		return fmt.Errorf("cpus must be 0 or between %v and %d, not %v", MinCPUs, MaxCPUs, job.CPUs)
	}
	p.cpus = runCPUs(cfg.CPUs, job.CPUs)
	args := bytes.TrimSpace(job.Args)
	if len(args) == 0 {
		args = []byte("{}")
	}
	if len(args) > maxArgsBytes {
		return fmt.Errorf("args larger than %d bytes", maxArgsBytes)
	}
	if args[0] != '{' || !json.Valid(args) {
		return fmt.Errorf("args must be a JSON object")
	}
	if err := checkEnv(job.Env); err != nil {
		return err
	}
	if err := job.Environment.validate(); err != nil {
		return err
	}
	p.msg.PythonPath = job.Environment.inRunPaths()
	switch job.Language {
	case "", LanguagePython:
	case LanguageBash:
		if job.EntrySkill != "" {
			return fmt.Errorf("a bash run has no entry skill")
		}
		p.msg.Language = LanguageBash
	default:
		return fmt.Errorf("language %q: want %q or %q", job.Language, LanguagePython, LanguageBash)
	}
	p.msg.RunID = job.RunID
	p.msg.Code = job.Code
	p.msg.Args = args
	p.msg.Env = job.Env
	if job.Egress != nil {
		p.msg.Env = withProxyEnv(job.Env)
		p.msg.Network = true
	}
	return nil
}

func (p *plan) checkSkills() error {
	files, size := 0, 0
	seen := make(map[string]bool, len(p.job.Skills))
	for _, s := range p.job.Skills {
		if err := checkSkillName(s.Name); err != nil {
			return err
		}
		if seen[s.Name] {
			return fmt.Errorf("skill %s mounted twice", s.Name)
		}
		seen[s.Name] = true
		if err := checkSkillFiles(s); err != nil {
			return err
		}
		files += len(s.Files)
		for _, f := range s.Files {
			size += len(f.Data)
		}
		msg, err := skillExports(s)
		if err != nil {
			return err
		}
		p.msg.Skills = append(p.msg.Skills, msg)
	}
	if files > maxJobFiles || size > maxJobBytes {
		return fmt.Errorf("skills hold more than %d files or %d bytes", maxJobFiles, maxJobBytes)
	}
	return nil
}

// checkSkillFiles rejects bad paths, duplicates and a file that is also a
// directory of another file.
func checkSkillFiles(s Skill) error {
	paths := make([]string, 0, len(s.Files))
	for _, f := range s.Files {
		if err := checkFilePath(f.Path); err != nil {
			return fmt.Errorf("skill %s: %w", s.Name, err)
		}
		paths = append(paths, f.Path)
	}
	slices.Sort(paths)
	for i := 1; i < len(paths); i++ {
		prev, cur := paths[i-1], paths[i]
		if prev == cur || len(cur) > len(prev) && cur[:len(prev)] == prev && cur[len(prev)] == '/' {
			return fmt.Errorf("skill %s: file %q clashes with %q", s.Name, prev, cur)
		}
	}
	return nil
}

// skillExports works out the module and function the skill package
// re-exports: Skill.Entrypoint/Export, which the registry took from the
// manifest; the sandbox never reads a skill.toml itself.
func skillExports(s Skill) (skillMessage, error) {
	msg := skillMessage{Name: s.Name, Root: path.Join(wire.JobMount, wire.SkillsDir, s.Name)}
	entry, export := s.Entrypoint, s.Export
	if entry == "" || export == "" {
		return msg, nil
	}
	mod, err := modulePath(entry)
	if err != nil {
		return msg, fmt.Errorf("skill %s: entrypoint: %w", s.Name, err)
	}
	if err := checkIdentifier(export); err != nil {
		return msg, fmt.Errorf("skill %s: export: %w", s.Name, err)
	}
	msg.Entry, msg.Export = mod, export
	return msg, nil
}

func (p *plan) checkEntry() error {
	job := p.job
	name := job.Entrypoint
	if name == "" {
		name = "main"
	}
	if err := checkIdentifier(name); err != nil {
		return fmt.Errorf("entrypoint: %w", err)
	}
	p.msg.Entrypoint = name
	if job.EntrySkill == "" {
		if job.EntryModule != "" {
			return fmt.Errorf("entry module %q without an entry skill", job.EntryModule)
		}
		return nil
	}
	if job.Code != "" {
		return fmt.Errorf("both code and an entry skill given")
	}
	idx := slices.IndexFunc(job.Skills, func(s Skill) bool { return s.Name == job.EntrySkill })
	if idx < 0 {
		return fmt.Errorf("entry skill %s is not among the mounted skills", job.EntrySkill)
	}
	mod, err := modulePath(job.EntryModule)
	if err != nil {
		return fmt.Errorf("entry module: %w", err)
	}
	if !slices.ContainsFunc(job.Skills[idx].Files, func(f File) bool { return f.Path == job.EntryModule }) {
		return fmt.Errorf("entry module %s is not a file of skill %s", job.EntryModule, job.EntrySkill)
	}
	p.msg.Skill, p.msg.Module = job.EntrySkill, mod
	return nil
}

func (p *plan) checkBlobs(cfg Config) error {
	ids := make(map[string]bool)
	for _, b := range p.job.InputBlobs {
		if err := checkBlobID(b.ID); err != nil {
			return err
		}
		if err := checkKind(b.Kind, true); err != nil {
			return fmt.Errorf("input blob %s: %w", b.ID, err)
		}
		if ids[b.ID] {
			return fmt.Errorf("blob id %s given twice", b.ID)
		}
		ids[b.ID] = true
		p.msg.Inputs = append(p.msg.Inputs, inputMessage{ID: b.ID, Path: path.Join(wire.BlobsMount, inputBlobFile(b.ID))})
	}
	if len(p.job.OutputBlobIDs) > cfg.MaxOutputBlobs {
		return fmt.Errorf("more than %d output blob ids", cfg.MaxOutputBlobs)
	}
	for _, id := range p.job.OutputBlobIDs {
		if err := checkBlobID(id); err != nil {
			return err
		}
		if ids[id] {
			return fmt.Errorf("blob id %s given twice", id)
		}
		ids[id] = true
	}
	p.msg.Outputs = append([]string{}, p.job.OutputBlobIDs...)
	return nil
}

// inputBlobFile names an input blob's file under /blobs: its id without
// the "blob:" prefix (a blob id is one safe path segment either way).
func inputBlobFile(id string) string {
	if f, ok := strings.CutPrefix(id, "blob:"); ok && f != "" {
		return f
	}
	return id
}

// runCPUs is a run's CPU share: the job's, capped by the gateway's (0
// on either side means no bound from that side).
func runCPUs(gateway, job float64) float64 {
	switch {
	case job == 0:
		return gateway
	case gateway == 0:
		return job
	}
	return min(gateway, job)
}

// cpuSeconds is the per-process CPU budget: cfg.CPUTime, else the timeout,
// rounded up to whole seconds (RLIMIT_CPU's granularity).
func cpuSeconds(cpu, timeout time.Duration) int64 {
	if cpu <= 0 {
		cpu = timeout
	}
	return int64(math.Ceil(cpu.Seconds()))
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}
