package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/dispatch/auth"

	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/internal/pyname"
	"github.com/skillgate/skillgate/internal/runerror"
	"github.com/skillgate/skillgate/pyenv"
	"github.com/skillgate/skillgate/runs"
	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/skills"
	"github.com/skillgate/skillgate/transport"
)

// Run limits enforced before a job reaches the sandbox.
const (
	maxInputBlobs  = 32
	maxMountSkills = 32
	maxOutputBlobs = 16
	maxRunTimeout  = 24 * time.Hour
)

// Runner runs sandbox jobs; *sandbox.Runner is the real one.
type Runner interface {
	Run(ctx context.Context, job sandbox.Job) (*sandbox.Result, error)
}

func overloaded(error) *transport.Error {
	return transport.AppError(transport.StringOverloaded, "Every sandbox is busy and the run queue is full.").WithRetry(500, 5)
}

// executionGroup is the methods that run code and the run methods that
// follow, cancel and list the runs: one group, since both meet the same
// errors (the skill, the input blobs, the sandbox queue, the run).
func (d *Dispatcher) executionGroup() methodGroup {
	return methodGroup{
		methods: append([]groupMethod{
			{name: MethodExecuteSkill, aliases: []string{"ExecuteSkill"}, fn: d.executeSkill},
			{name: MethodRunCode, aliases: []string{"RunCode"}, fn: d.runCode},
		}, d.runMethods()...),
		errors: errorTable{
			{skills.ErrSkillNotFound, skillNotFound},
			{skills.ErrEnvironmentBuilding, environmentBuilding},
			{pyenv.ErrBuilding, baseBuilding},
			{pyenv.ErrBuildFailed, baseFailed},
			{blob.ErrNotFound, blobNotFound},
			{blob.ErrStorageFull, storageFull},
			{sandbox.ErrOverloaded, overloaded},
			{runs.ErrNotFound, runNotFound},
		},
	}
}

// RunResult is the run object of execute_skill and run_code. Failures of
// the code itself are reported here (status "failed"), never as protocol
// errors.
type RunResult struct {
	Status      string           `json:"status"`
	RunID       string           `json:"run_id"`
	Summary     string           `json:"summary"`
	Output      json.RawMessage  `json:"output,omitempty"`
	OutputBlobs []string         `json:"output_blobs"`
	InputBlobs  []string         `json:"input_blobs,omitempty"` // the input_blobs the run was given
	LogsPreview string           `json:"logs_preview"`
	LogsBlob    string           `json:"logs_blob,omitempty"`
	Error       *RunErrorInfo    `json:"error,omitempty"`
	Retry       *transport.Retry `json:"retry,omitempty"`
	DurationMS  int64            `json:"duration_ms"`
}

// RunErrorInfo says why a run failed: the Python exception class, or one
// of the gateway's run error types (internal/runerror).
type RunErrorInfo struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	// Details are the error classes' details of the gateway's own types:
	// timeout_ms and elapsed_ms of EXECUTION_TIMEOUT, the violations of
	// VALIDATION_ERROR.
	Details map[string]any `json:"details,omitempty"`
}

// runRequest is what both execution methods hand to run.
type runRequest struct {
	kind   string // metrics label: execute_skill or run_code
	label  string // what ran, for the summary
	what   string // what ran, for run_event and list_runs: name@version or run_code
	job    sandbox.Job
	blobs  []string // input blob ids
	mounts []*skills.Skill
	// network is the executed skill's [permissions] network.
	network []string
	mode    runMode
}

func (d *Dispatcher) executeSkill(ctx context.Context, call *Call) (any, error) {
	p := newParams(call.Params)
	name, version := p.RequiredString("name"), p.String("version")
	args := p.Object("args")
	blobs := p.Strings("input_blobs", maxInputBlobs)
	timeout := p.Int("timeout_ms", 0, 1, maxRunTimeout.Milliseconds())
	mode := readRunMode(&p)
	if err := p.Err(); err != nil {
		return nil, err
	}
	s, err := d.resolveRunnable(call, "name", name, version)
	if err != nil {
		return nil, err
	}
	violations, err := checkArgs(s, args)
	if err != nil {
		return nil, err
	}
	rt := s.Manifest.Runtime
	if timeout == 0 {
		timeout = rt.TimeoutMS
	}
	req := &runRequest{
		kind: MethodExecuteSkill, label: s.Manifest.Name + " " + s.Manifest.Version, blobs: blobs,
		what: s.Manifest.Name + "@" + s.Manifest.Version, mounts: []*skills.Skill{s}, mode: mode,
		network: s.Manifest.Permissions.Network,
		job: sandbox.Job{
			EntrySkill: s.Manifest.Name, EntryModule: rt.Entrypoint, Entrypoint: rt.Export,
			Args: args, Env: d.secrets(s), Timeout: time.Duration(timeout) * time.Millisecond, CPUs: rt.CPUs,
		},
	}
	if len(violations) > 0 {
		return d.argsFailed(call, req, violations), nil
	}
	return d.execute(ctx, call, req)
}

// checkArgs validates args against the skill's args_schema before any
// sandbox starts. Args that are no JSON a schema can check are bad params
// (-32602); violations are returned for argsFailed.
func checkArgs(s *skills.Skill, args json.RawMessage) ([]skills.Violation, error) {
	vs, err := s.ValidateArgs(args)
	if err != nil {
		return nil, paramErr("args", "must be JSON the skill's args_schema can check: "+err.Error())
	}
	return vs, nil
}

// argsFailed answers args that fail the skill's args_schema as the Skills
// Protocol lists a validation error in skill arguments: an
// execution-level error, a failed run (recorded, so get_run and list_runs
// know it) with VALIDATION_ERROR and every violation in the error classes'
// shape. No sandbox starts and no run slot is taken, whatever the mode.
func (d *Dispatcher) argsFailed(call *Call, req *runRequest, vs []skills.Violation) *RunResult {
	run := d.opts.Runs.Start(runs.NewID(), blobOwner(call), req.what, call.RequestID(), func(error) {})
	parts := make([]string, 0, len(vs))
	for _, v := range vs {
		f := v.Field
		if f == "" {
			f = "(args)"
		}
		parts = append(parts, f+": "+v.Message)
	}
	list := strings.Join(parts, "; ")
	out := &RunResult{Status: sandbox.StatusFailed, RunID: run.ID(), OutputBlobs: []string{},
		Error: &RunErrorInfo{Type: runerror.Validation,
			Message: "args do not match the args_schema of " + req.label + ": " + list,
			Details: map[string]any{"violations": vs}},
	}
	// The summary names the violations too: it is what an MCP client's
	// tool error shows.
	out.Summary = fmt.Sprintf("%s did not run: its args fail its args_schema (%d violation%s): %s.",
		req.label, len(vs), plural(len(vs)), shortMessage(list))
	d.finishRun(run, req, out)
	d.recordRun(req.kind, out, 0)
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func (d *Dispatcher) runCode(ctx context.Context, call *Call) (any, error) {
	p := newParams(call.Params)
	language := p.RequiredString("language")
	code := p.str("code", true)
	entrypoint := p.String("entrypoint")
	args := p.Object("args")
	mounts := p.Strings("mount_skills", maxMountSkills)
	blobs := p.Strings("input_blobs", maxInputBlobs)
	timeout := p.Int("timeout_ms", 0, 1, maxRunTimeout.Milliseconds())
	limits := p.Nested("limits")
	limitTimeout := limits.Int("timeout_ms", 0, 1, maxRunTimeout.Milliseconds())
	p.Adopt(limits)
	mode := readRunMode(&p)
	if err := p.Err(); err != nil {
		return nil, err
	}
	switch language {
	case sandbox.LanguagePython:
	case sandbox.LanguageBash:
		if entrypoint != "" {
			return nil, paramErr("entrypoint", "has no meaning for a bash run: the script runs from its first line")
		}
		entrypoint = "main"
	default:
		return nil, paramErr("language", "must be \"python\" or \"bash\", the languages this gateway runs")
	}
	if entrypoint == "" {
		entrypoint = "main"
	}
	if !pyname.IsIdentifier(entrypoint) {
		return nil, paramErr("entrypoint", "must be the name of a function defined in code: a Python identifier "+
			"(letters, digits and _, not starting with a digit, not a keyword) such as \"main\", not "+quoteName(entrypoint))
	}
	if timeout == 0 {
		timeout = limitTimeout
	}
	req := &runRequest{
		kind: MethodRunCode, label: "run_code", what: "run_code", blobs: blobs, mode: mode,
		job: sandbox.Job{Code: code, Language: language, Entrypoint: entrypoint, Args: args, Timeout: time.Duration(timeout) * time.Millisecond},
	}
	var err error
	if req.mounts, err = d.resolveMounts(call, mounts); err != nil {
		return nil, err
	}
	return d.execute(ctx, call, req)
}

// resolveMounts resolves mount_skills ("name" or "name@version"). A name
// may appear once: a run imports skills.<name> as one module, so two
// versions of it cannot both be mounted.
func (d *Dispatcher) resolveMounts(call *Call, mounts []string) ([]*skills.Skill, error) {
	out := make([]*skills.Skill, 0, len(mounts))
	seen := make(map[string]int, len(mounts))
	for i, m := range mounts {
		param := fmt.Sprintf("mount_skills[%d]", i)
		name, version, _ := strings.Cut(m, "@")
		if j, dup := seen[name]; dup {
			return nil, paramErr(param, fmt.Sprintf("mounts %s again (mount_skills[%d] already does): "+
				"a run imports one version of a skill; list each skill once", quoteName(name), j))
		}
		seen[name] = i
		if err := checkSkill(call, name); err != nil {
			return nil, err
		}
		// Any kind: an instruction skill's files (an Agent Skill's
		// scripts) are what a run mounts it for.
		s, err := d.catalog().Resolve(name, version)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// resolveRunnable finds an action skill the caller may see.
func (d *Dispatcher) resolveRunnable(call *Call, param, name, version string) (*skills.Skill, error) {
	if err := checkSkill(call, name); err != nil {
		return nil, err
	}
	s, err := d.catalog().Resolve(name, version)
	if err != nil {
		return nil, err
	}
	if s.Manifest.Kind != skills.KindAction || s.Manifest.Runtime == nil {
		return nil, paramErr(param, "names "+s.Manifest.Name+", an instruction skill: it has no code to run; read it with describe_skill")
	}
	return s, nil
}

// secrets passes the gateway's values of the environment variables a
// skill declares, and nothing else.
func (d *Dispatcher) secrets(s *skills.Skill) map[string]string {
	env := map[string]string{}
	for _, name := range s.Manifest.Permissions.Secrets {
		if v, ok := d.opts.LookupEnv(name); ok {
			env[name] = v
		}
	}
	return env
}

// execute takes a concurrent-run slot of the caller, loads the input
// blobs, and runs the job as the call's mode says: to the end (plain),
// with its events sent to the caller meanwhile (stream), or in the
// background (async).
func (d *Dispatcher) execute(ctx context.Context, call *Call, req *runRequest) (any, error) {
	if d.opts.Runner == nil {
		return nil, transport.AppError(StringSandboxUnavailable, "Code execution is not available on this gateway.").
			WithDetails(d.opts.RunnerUnavailable)
	}
	if req.mode == modeStream && !call.CanNotify() {
		return nil, paramErr("stream", noStreamReason(call))
	}
	env, envKeys, err := d.runEnvironment(req.mounts)
	if err != nil {
		return nil, err
	}
	req.job.Environment = env
	release := func() {}
	if call.Identity != nil {
		if release, err = d.limiter.AcquireRun(call.Identity); err != nil {
			return nil, err
		}
	}
	if b := d.opts.Environments; b != nil && len(envKeys) > 0 {
		// A reload during the run must not remove what it has mounted.
		limiterRelease, unhold := release, b.Hold(envKeys...)
		release = func() { limiterRelease(); unhold() }
	}
	inputs, err := d.loadInputs(ctx, call, req.blobs)
	if err != nil {
		release()
		return nil, err
	}
	job := d.prepareJob(call, req, inputs)
	if req.mode == modeAsync {
		return d.startAsync(ctx, call, req, job, release)
	}
	defer release()
	if req.mode == modeStream {
		// A stream ends, and its run with it as with a disconnect, once a
		// reload revokes the credential it was opened with.
		sctx, stop := auth.UntilRevoked(ctx, d.authn, call.Identity)
		defer stop()
		run, runCtx := d.startRun(sctx, call, req, job.RunID, call.RequestID())
		out, err := d.streamRun(sctx, runCtx, call, run, req, job)
		if rerr := auth.Revoked(sctx); err != nil && rerr != nil {
			return nil, rerr
		}
		return out, err
	}
	run, runCtx := d.startRun(ctx, call, req, job.RunID, call.RequestID())
	return d.completeRun(runCtx, call, run, req, job, nil)
}

// prepareJob makes the sandbox job of a request, with a fresh run id.
func (d *Dispatcher) prepareJob(call *Call, req *runRequest, inputs []sandbox.InputBlob) sandbox.Job {
	job := req.job
	job.RunID = runs.NewID()
	job.Egress = d.runEgress(call, req, job.RunID)
	job.InputBlobs = inputs
	for _, s := range req.mounts {
		job.Skills = append(job.Skills, sandboxSkill(s))
	}
	job.OutputBlobIDs = blob.NewIDs(maxOutputBlobs)
	return job
}

// completeRun runs the job to its end and finishes the run's record with
// the run object. admitted, when set, is closed once the sandbox queue has
// taken the run.
func (d *Dispatcher) completeRun(ctx context.Context, call *Call, run *runs.Run, req *runRequest, job sandbox.Job, admitted func()) (*RunResult, error) {
	defer func() {
		if p := recover(); p != nil {
			// The record must not stay "running" forever; the panic goes
			// on to the dispatcher's recovery.
			_, _ = d.runFailed(context.Background(), call, run, req, errors.New("internal error"))
			panic(p)
		}
	}()
	job.Observer = observe(run, admitted)
	// Storing what the run wrote must not be cut short by a cancel that
	// came too late to stop the run.
	keep := context.WithoutCancel(ctx)
	stored := &outputStore{ctx: keep, blobs: d.opts.Blobs, put: func(kind string) blob.PutOptions { return blobPut(call, kind) }}
	job.Outputs = stored
	res, err := d.opts.Runner.Run(ctx, job)
	if err != nil {
		stored.discard()
		return d.runFailed(ctx, call, run, req, err)
	}
	out, err := d.runResult(job.RunID, req, res, stored)
	if err != nil {
		call.Log(zerolog.WarnLevel).Str("run_id", job.RunID).Str("what", req.label).AnErr("cause", err).
			Msg("run completed but its output blobs could not be stored; nothing of it was kept")
		return d.runFailed(ctx, call, run, req, err)
	}
	d.storeLogs(keep, call, run, out)
	for i, id := range out.OutputBlobs {
		b := res.OutputBlobs[i]
		run.Blob(id, b.Kind, max(b.Size, int64(len(b.Data))))
	}
	d.finishRun(run, req, out)
	d.recordRun(req.kind, out, res.Duration)
	call.Log(zerolog.InfoLevel).Str("run_id", out.RunID).Str("what", req.label).Str("status", out.Status).
		Dur("took", res.Duration).Msg("run finished")
	return out, nil
}

func sandboxSkill(s *skills.Skill) sandbox.Skill {
	files := s.FileData()
	out := sandbox.Skill{Name: s.Manifest.Name, Files: make([]sandbox.File, len(files))}
	if rt := s.Manifest.Runtime; rt != nil {
		out.Entrypoint, out.Export = rt.Entrypoint, rt.Export
	}
	for i, f := range files {
		out.Files[i] = sandbox.File{Path: f.Path, Data: f.Data}
	}
	return out
}

// loadInputs reads the input blobs, each once however often it is
// listed; an unknown id, or another identity's blob, is BLOB_NOT_FOUND.
func (d *Dispatcher) loadInputs(ctx context.Context, call *Call, ids []string) ([]sandbox.InputBlob, error) {
	var out []sandbox.InputBlob
	seen := make(map[string]bool, len(ids))
	for i, id := range ids {
		if blob.ValidateID(id) != nil {
			return nil, paramErr(fmt.Sprintf("input_blobs[%d]", i), "is not a blob id (blob:<32 hex digits>)")
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		b, err := blob.OpenOwned(ctx, d.opts.Blobs, id, blobOwner(call))
		if err != nil {
			return nil, err
		}
		info := b.Info()
		data, err := io.ReadAll(io.NewSectionReader(b, 0, info.Size))
		_ = b.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, sandbox.InputBlob{ID: id, Kind: info.Kind, Data: data})
	}
	return out, nil
}

// runResult turns a sandbox result into the run object, with the blobs
// the run wrote, which stored has kept under the caller's identity. Output
// that is not a JSON object fails the run (INVALID_OUTPUT); a blob the
// store refuses fails it too, except for a full store, which is the
// STORAGE_FULL error of the call: the run's work is lost and a retry can
// succeed. A failed run keeps none of its blobs.
func (d *Dispatcher) runResult(runID string, req *runRequest, res *sandbox.Result, stored *outputStore) (*RunResult, error) {
	out := &RunResult{
		Status: res.Status, RunID: runID, LogsPreview: res.Logs, OutputBlobs: []string{},
		DurationMS: res.Duration.Milliseconds(),
	}
	e := res.Error
	if res.Status == sandbox.StatusCompleted {
		output, oerr := objectOutput(res.Output)
		if oerr == nil {
			oerr = stored.rest(res.OutputBlobs)
		}
		if oerr == nil {
			out.OutputBlobs = append(out.OutputBlobs, stored.ids...)
			out.Output = output
			out.Summary = fmt.Sprintf("%s completed in %d ms%s.", req.label, out.DurationMS, blobNote(len(out.OutputBlobs)))
			return out, nil
		}
		e = outputError(oerr)
		out.Status = sandbox.StatusFailed
	}
	stored.discard()
	if errors.Is(stored.err, blob.ErrStorageFull) {
		return nil, stored.err
	}
	if stored.err != nil {
		// The sandbox failed the run because a blob could not be stored.
		e = outputError(stored.err)
	}
	if e == nil {
		e = &sandbox.RunError{Type: runerror.Sandbox, Message: "the run failed without a reason"}
	}
	out.Error = &RunErrorInfo{Type: e.Type, Message: e.Message}
	if e.Type == runerror.Timeout {
		out.Error.Details = map[string]any{"timeout_ms": d.runTimeout(req).Milliseconds(), "elapsed_ms": out.DurationMS}
	}
	out.Summary, out.Retry = failureSummary(req.label, e, out.DurationMS)
	return out, nil
}

// runTimeout is the wall-clock limit a run had: its own timeout_ms, else
// the gateway's default run timeout.
func (d *Dispatcher) runTimeout(req *runRequest) time.Duration {
	if req.job.Timeout > 0 {
		return req.job.Timeout
	}
	return time.Duration(d.opts.Info.Limits.DefaultRunTimeoutMS) * time.Millisecond
}

// errNotObject: a run returned something other than a JSON object.
var errNotObject = errors.New("not an object")

// objectOutput checks that a run's output is a JSON object, as the Skills
// Protocol's run result requires. A function that returns nothing (None)
// completed with nothing to say: its output is {}.
func objectOutput(raw json.RawMessage) (json.RawMessage, error) {
	v := bytes.TrimSpace(raw)
	switch {
	case len(v) == 0 || string(v) == "null":
		return json.RawMessage("{}"), nil
	case v[0] == '{':
		return raw, nil
	}
	return nil, fmt.Errorf("the entrypoint returned %s; a run's output must be a JSON object (a dict), "+
		"for example {\"result\": value}: %w", jsonType(v), errNotObject)
}

// outputError is the failure of a completed run whose results could not
// be kept: a wrong output or a blob the store refused for its content is
// the run's own doing; anything else is the gateway's.
func outputError(err error) *sandbox.RunError {
	switch {
	case errors.Is(err, errNotObject):
		return &sandbox.RunError{Type: runerror.InvalidOutput, Message: err.Error()}
	case errors.Is(err, blob.ErrInvalidKind), errors.Is(err, blob.ErrTooLarge):
		return &sandbox.RunError{Type: runerror.BlobError, Message: err.Error()}
	}
	return &sandbox.RunError{Type: runerror.Sandbox, Message: err.Error()}
}

// outputStore is the sandbox.OutputSink of a run: it stores each blob the
// run wrote as the sandbox collects it, streamed from its file. The size
// of the file is known first, so the store's bound and the identity's
// quota refuse a blob that cannot fit before any byte of it is read, and
// the gateway never holds a whole blob in memory. All or none: discard
// removes what was stored when the run does not complete.
type outputStore struct {
	ctx   context.Context
	blobs blob.Store
	put   func(kind string) blob.PutOptions
	ids   []string // stored, in order
	err   error    // the first failure
}

// Output implements sandbox.OutputSink.
func (o *outputStore) Output(b sandbox.OutputBlob, r io.Reader) error {
	opts := o.put(b.Kind)
	opts.Size = b.Size
	if _, err := o.blobs.Put(o.ctx, b.ID, opts, r); err != nil {
		o.err = fmt.Errorf("storing output blob %s: %w", b.ID, err)
		return o.err
	}
	o.ids = append(o.ids, b.ID)
	return nil
}

// rest stores the blobs a Runner returned with their data instead of
// handing them to the sink.
func (o *outputStore) rest(blobs []sandbox.OutputBlob) error {
	for _, b := range blobs[min(len(o.ids), len(blobs)):] {
		b.Size = int64(len(b.Data))
		if err := o.Output(b, bytes.NewReader(b.Data)); err != nil {
			return err
		}
	}
	return nil
}

// discard removes the blobs stored so far.
func (o *outputStore) discard() {
	for _, id := range o.ids {
		_ = o.blobs.Remove(context.WithoutCancel(o.ctx), id)
	}
	o.ids = nil
}

func blobNote(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "; wrote 1 blob"
	}
	return fmt.Sprintf("; wrote %d blobs", n)
}

// failureSummary explains a failed run and says whether retrying helps.
func failureSummary(label string, e *sandbox.RunError, ms int64) (string, *transport.Retry) {
	switch e.Type {
	case runerror.Timeout:
		return fmt.Sprintf("%s timed out after %d ms; retry with a larger timeout_ms if the work needs it.", label, ms),
			runRetry()
	case runerror.MemoryLimit:
		return label + " exceeded its memory limit; process the data in smaller pieces.", nil
	case runerror.OutputTooLarge:
		// Two limits share this type (the 4 KB output and the logs' hard
		// cap); the sandbox's message says which one and by how much.
		return label + " went over a size limit: " + shortMessage(e.Message), nil
	case errCanceledRun.Type:
		return label + " was cancelled; every process of it was killed.", nil
	case runerror.Sandbox:
		return label + " could not run: " + shortMessage(e.Message), runRetry()
	}
	return label + " failed: " + e.Type + ": " + shortMessage(e.Message), nil
}

func shortMessage(m string) string {
	if len(m) > 200 {
		return strings.ToValidUTF8(m[:200], "") + "…"
	}
	return m
}

// runFailureReasons maps a failed run's error type to the bounded reason
// label of skillgate_sandbox_runs_total; any other type is "exception".
var runFailureReasons = map[string]string{
	runerror.Timeout:        "timeout",
	runerror.MemoryLimit:    "memory",
	runerror.OutputTooLarge: "output_too_large",
	runerror.InvalidOutput:  "invalid_output",
	runerror.Sandbox:        "sandbox_error",
	runerror.Canceled:       "cancelled",
	runerror.Validation:     "validation_error",
}

// recordRun counts a run by kind, status and a bounded reason.
func (d *Dispatcher) recordRun(kind string, out *RunResult, took time.Duration) {
	reason := "ok"
	if out.Error != nil {
		var known bool
		if reason, known = runFailureReasons[out.Error.Type]; !known {
			reason = "exception"
		}
	}
	d.opts.Metrics.SandboxRuns.WithLabelValues(kind, out.Status, reason).Inc()
	d.opts.Metrics.SandboxDuration.WithLabelValues(kind).Observe(took.Seconds())
}
