package main

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/blob/s3blob"
	"github.com/skillgate/skillgate/httpfront"
	"github.com/skillgate/skillgate/runs"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/framedfront"
	"github.com/skillgate/skillgate/mcpfront"
	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/session"
)

// serveConfig is everything `skillgate serve` can be told.
type serveConfig struct {
	Listen            string
	TLSListen         string
	TLSCert           string
	TLSKey            string
	TLSClientCA       string
	HTTPListen        string
	HTTPTLSCert       string
	HTTPTLSKey        string
	HTTPTLSClientCA   string
	MCP               bool
	Console           bool
	MCPTools          string
	MCPMaxSkillTools  int
	MCPMaxSessions    int
	MCPSessionIdle    time.Duration
	MetricsListen     string
	SkillsDir         string
	WatchSkills       bool
	DataDir           string
	BlobStore         string
	S3Endpoint        string
	S3Region          string
	S3PathStyle       bool
	MaxBlobSize       int64
	MaxBlobStoreBytes int64
	MaxPendingUploads int
	MaxRunOutputBytes int64
	BlobTTL           time.Duration
	RunRetention      time.Duration

	// Bounds of the retained run records (runs.Bounds).
	RunMaxRecords            int
	RunMaxRecordBytes        int64
	RunMaxRecordsPerIdentity int
	RunMaxRecordBytesPerID   int64

	Python string
	// The Python environments (pyenv): the base environment's
	// requirements file and preload, and the package sources.
	PythonRequirements  string
	PythonFindLinks     []string
	PythonIndexURL      string
	PythonPreload       []string
	SandboxMode         string
	SandboxTemplate     string
	SandboxIDMap        string
	SandboxCgroup       string
	SandboxWorkDir      string
	SandboxWorkers      int
	SandboxWarmPool     int
	SandboxWarmMemory   int64
	SandboxMaxTemplates int
	SandboxUIDBase      uint32
	RunTimeout          time.Duration
	MaxRunTimeout       time.Duration
	RunMemory           int64
	RunCPUs             float64
	Egress              string
	EgressAllow         []string
	EgressDeny          []string
	EgressPrivate       []string
	RunCodeNetwork      []string
	EgressMaxConns      int
	EgressMaxBytes      int64
	EgressMaxHeader     int64
	EgressMaxReaders    int
	KeepaliveInterval   time.Duration
	KeepaliveTimeout    time.Duration
	FrameTimeout        time.Duration
	InitTimeout         time.Duration
	DrainTimeout        time.Duration
	DrainDelay          time.Duration
	WriteTimeout        time.Duration
	MaxMessageSize      int
	MaxConnections      int
	MaxInflight         int
	MaxQueuedBytes      int
	MaxHTTPConns        int
	HTTPOrigins         []string
	HTTPHosts           []string
	MaxTotalQueued      int64
	IdentityShare       float64
	AuthFile            string
	AllowAnonymous      bool
	AuthorizationURL    string
	UpgradeURL          string
	LogLevel            string
	LogFormat           string
	Pprof               bool
}

// registerServeFlags defines every serve flag with its default. The flag
// names are also the config file keys and, upper-cased with '_' for '-'
// and prefixed SKILLGATE_, the environment variables.
func registerServeFlags(fs *pflag.FlagSet, c *serveConfig) {
	d := session.DefaultConfig()
	registerLocalFlags(fs, c)
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:7400", "framed JSON-RPC over TCP address (empty: off)")
	fs.StringVar(&c.TLSListen, "tls-listen", "", "framed JSON-RPC over TLS address (empty: off)")
	fs.StringVar(&c.TLSCert, "tls-cert", "", "PEM certificate chain for --tls-listen")
	fs.StringVar(&c.TLSKey, "tls-key", "", "PEM private key for --tls-listen")
	fs.StringVar(&c.TLSClientCA, "tls-client-ca", "", "PEM CA bundle; when set, TLS clients must present a certificate it signed")
	fs.StringVar(&c.HTTPListen, "http-listen", "127.0.0.1:8080", "stateless JSON-RPC 2.0 front door, POST /rpc (empty: off)")
	fs.StringVar(&c.HTTPTLSCert, "http-tls-cert", "", "PEM certificate chain: --http-listen serves /rpc and /mcp over HTTPS")
	fs.StringVar(&c.HTTPTLSKey, "http-tls-key", "", "PEM private key for --http-tls-cert")
	fs.StringVar(&c.HTTPTLSClientCA, "http-tls-client-ca", "", "PEM CA bundle; when set, HTTPS clients must present a certificate it signed")
	fs.BoolVar(&c.MCP, "mcp", true, "serve the MCP front door (Streamable HTTP) at /mcp on --http-listen")
	fs.BoolVar(&c.Console, "console", true, "serve the run console, a browser page calling /rpc, at /console/ on --http-listen")
	fs.IntVar(&c.MCPMaxSessions, "mcp-max-sessions", mcpfront.DefaultMaxSessions, "MCP sessions open at once across identities; past it new ones get 503 OVERLOADED (0: no limit)")
	fs.DurationVar(&c.MCPSessionIdle, "mcp-session-idle-timeout", mcpfront.DefaultSessionTimeout, "close an MCP session that has sent no request for this long, freeing what it holds")
	fs.StringVar(&c.MetricsListen, "metrics-listen", "127.0.0.1:9400", "address of /metrics, /healthz and /readyz (empty: off)")
	fs.DurationVar(&c.KeepaliveInterval, "keepalive-interval", d.KeepaliveInterval, "send a _Keepalive after this long without traffic")
	fs.DurationVar(&c.KeepaliveTimeout, "keepalive-timeout", d.KeepaliveTimeout, "abort with KEEPALIVE when a _Keepalive is unanswered this long")
	fs.DurationVar(&c.FrameTimeout, "frame-timeout", d.FrameTimeout, "abort when a frame that has begun does not complete within this")
	fs.DurationVar(&c.InitTimeout, "init-timeout", d.InitTimeout, "close connections that have not initialized within this (0: never)")
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", 30*time.Second, "on SIGTERM/SIGINT, how long in-flight requests and async runs may take to finish")
	fs.DurationVar(&c.DrainDelay, "drain-delay", 5*time.Second, "on SIGTERM, how long /readyz answers 503 while the gateway still serves, so load balancers stop routing to it")
	fs.DurationVar(&c.WriteTimeout, "write-timeout", d.WriteTimeout, "deadline of each socket write")
	fs.IntVar(&c.MaxMessageSize, "max-message-size", d.MaxMessageSize, "largest frame body accepted or sent, in bytes")
	fs.IntVar(&c.MaxConnections, "max-connections", 20000, "open framed connections; past it new ones get OVERLOADED (0: no limit)")
	fs.IntVar(&c.MaxInflight, "max-inflight", d.MaxInflight, "concurrent requests per connection; past it OVERLOADED")
	fs.IntVar(&c.MaxQueuedBytes, "max-queued-bytes", 0, "bytes queued for one connection before it is cut off as a slow reader (0: 8 × max-message-size)")
	fs.IntVar(&c.MaxHTTPConns, "max-http-connections", 1024, "open connections of --http-listen; past it new ones get 503 OVERLOADED (0: no limit)")
	fs.StringSliceVar(&c.HTTPOrigins, "http-allowed-origins", nil, "browser origins (scheme://host[:port]) whose requests POST /rpc serves; any other Origin is refused")
	fs.StringSliceVar(&c.HTTPHosts, "http-allowed-hosts", nil, "Host names accepted, besides localhost and loopback addresses, by an HTTP listener on loopback (e.g. behind a local proxy)")
	fs.Int64Var(&c.MaxTotalQueued, "max-total-queued-bytes", 0, "bytes queued across all connections and HTTP answers; past it new work gets OVERLOADED (0: a quarter of the memory limit, cgroup or physical; -1: no limit)")
	fs.Float64Var(&c.IdentityShare, "identity-queued-share", 0.5, "fraction of --max-total-queued-bytes the framed connections of one identity may hold; past it that identity's new work gets OVERLOADED while others are still served (1: no per-identity bound)")
	fs.StringVar(&c.AuthFile, "auth-file", "", "YAML file of identities (hashed tokens, client certificates, policies); empty: no authentication")
	fs.BoolVar(&c.AllowAnonymous, "allow-anonymous", false, "run without --auth-file even when listening beyond loopback")
	fs.StringVar(&c.AuthorizationURL, "auth-authorization-url", "", "absolute http(s) URL where clients get credentials; sent as authorization_url in AUTH_REQUIRED errors (empty: not sent)")
	fs.StringVar(&c.UpgradeURL, "protocol-upgrade-url", "", "absolute http(s) URL of upgrade instructions; sent as upgrade_url in VERSION_INCOMPATIBLE errors (empty: not sent)")
	fs.BoolVar(&c.Pprof, "pprof", false, "serve /debug/pprof/ on the metrics listener")
}

// registerLocalFlags defines the flags `skillgate mcp` shares with serve:
// skills, blobs, sandbox, MCP tools and logging.
func registerLocalFlags(fs *pflag.FlagSet, c *serveConfig) {
	fs.String("config", "", "config file (YAML, TOML or JSON) whose keys are these flag names")
	fs.StringVar(&c.SkillsDir, "skills-dir", "", "folder searched (at any depth) for skill packages; empty serves only the built-in guide")
	fs.BoolVar(&c.WatchSkills, "watch-skills", true, "reload skills when files under --skills-dir change (SIGHUP always reloads)")
	fs.StringVar(&c.DataDir, "data-dir", "", "folder of the blob store; empty keeps blobs in memory only")
	fs.StringVar(&c.BlobStore, "blob-store", "", "where blobs live: empty (--data-dir, or memory without it), \"memory\", or s3://bucket/prefix shared by replicas")
	fs.StringVar(&c.S3Endpoint, "s3-endpoint", "", "S3 service of an s3:// --blob-store: host:port (HTTPS) or http(s)://host:port; empty: AWS")
	fs.StringVar(&c.S3Region, "s3-region", "", "region of the s3:// --blob-store bucket (empty: ask the service)")
	fs.BoolVar(&c.S3PathStyle, "s3-path-style", false, "address the bucket as endpoint/bucket (MinIO, endpoints without DNS names)")
	fs.Int64Var(&c.MaxBlobSize, "max-blob-size", blob.DefaultMaxSize, "largest blob accepted, in bytes")
	fs.Int64Var(&c.MaxBlobStoreBytes, "max-blob-store-bytes", 0, "bytes all blobs together may hold; past it blob writes answer STORAGE_FULL (0: no limit but the disk)")
	fs.IntVar(&c.MaxPendingUploads, "max-pending-uploads", blob.DefaultMaxPendingUploads, "unfinished uploads (begin_upload without finish_upload) one identity may have at once; past it begin_upload answers STORAGE_FULL")
	fs.Int64Var(&c.MaxRunOutputBytes, "max-run-output-bytes", sandbox.DefaultMaxRunOutputBytes, "bytes the output blobs of one run may hold together, counted before any is read; a run past it fails with OUTPUT_TOO_LARGE")
	fs.DurationVar(&c.BlobTTL, "blob-ttl", blob.DefaultTTL, "blobs older than this are removed (0: keep forever)")
	fs.DurationVar(&c.RunRetention, "run-retention", runs.DefaultRetention, "how long a finished run stays readable with get_run, watch_run and list_runs (kept in the bucket of an s3:// --blob-store, else under --data-dir/runs when set)")
	fs.IntVar(&c.RunMaxRecords, "run-max-records", runs.DefaultMaxRecords, "finished run records kept in all; past it the oldest finished go first")
	fs.Int64Var(&c.RunMaxRecordBytes, "run-max-record-bytes", runs.DefaultMaxBytes, "bytes of finished run records kept in all (events and run objects as stored); past it the oldest finished go first")
	fs.IntVar(&c.RunMaxRecordsPerIdentity, "run-max-records-per-identity", runs.DefaultMaxOwnerRecords, "finished run records kept per identity; past it the identity's oldest finished go first")
	fs.Int64Var(&c.RunMaxRecordBytesPerID, "run-max-record-bytes-per-identity", runs.DefaultMaxOwnerBytes, "bytes of finished run records kept per identity; past it the identity's oldest finished go first")
	sd := sandbox.DefaultConfig()
	fs.StringVar(&c.Python, "python", sd.Python, "absolute path of the Python interpreter that runs skills (under /usr)")
	registerPythonFlags(fs, c)
	fs.StringVar(&c.SandboxMode, "sandbox-mode", string(sandbox.ModeAuto), "auto, root or rootless: root maps a uid range and uses cgroups; rootless builds the sandbox from an unprivileged user namespace (auto: root when run as root)")
	fs.StringVar(&c.SandboxTemplate, "sandbox-template", string(sandbox.TemplateAuto), "on, off or auto: fork each sandbox from a template that has Python and the runtime loaded (auto: when it passes the start-up self-check) instead of starting it from scratch")
	registerDeprecatedFlags(fs)
	fs.StringVar(&c.SandboxIDMap, "sandbox-idmap", string(sandbox.IDMapAuto), "rootless only: subordinate maps runs to the gateway user's /etc/subuid range with newuidmap; own maps them to the gateway's own uid (auto: subordinate where available)")
	fs.StringVar(&c.SandboxCgroup, "sandbox-cgroup", "", "rootless only: a cgroup v2 directory delegated to the gateway's user to create run cgroups in (default: its own cgroup when writable)")
	fs.StringVar(&c.SandboxWorkDir, "sandbox-work-dir", "", "directory for the sandboxes' host state and runtime; it must belong to the gateway's user and be writable by no one else (default: $TMPDIR/skillgate-sandbox as root, else $XDG_RUNTIME_DIR/skillgate-sandbox or $TMPDIR/skillgate-sandbox-<uid>)")
	fs.IntVar(&c.SandboxWorkers, "sandbox-workers", sd.Workers, "runs executed at once; 4 × as many may wait; 0 turns execution off")
	fs.IntVar(&c.SandboxWarmPool, "sandbox-warm-pool", -1, "pre-started single-use sandboxes kept ready (-1: two per worker; 0: cold starts)")
	fs.Int64Var(&c.SandboxWarmMemory, "sandbox-warm-memory", 0, "bytes the warm sandboxes may take together; the pool shrinks to fit (0: no bound beyond --sandbox-warm-pool)")
	fs.IntVar(&c.SandboxMaxTemplates, "sandbox-max-templates", sandbox.DefaultConfig().MaxTemplates, "sandbox templates running at once, one per Python environment in use; the least recently used idle one is stopped first (their memory counts in --sandbox-warm-memory)")
	fs.Uint32Var(&c.SandboxUIDBase, "sandbox-uid-base", sd.UIDBase, "first host uid of the 65536-id range sandboxes map to")
	fs.DurationVar(&c.RunTimeout, "run-timeout", sd.DefaultTimeout, "wall-clock limit of a run that names none")
	fs.DurationVar(&c.MaxRunTimeout, "max-run-timeout", sd.MaxTimeout, "the largest timeout a run may ask for")
	fs.Int64Var(&c.RunMemory, "run-memory", sd.MemoryBytes, "memory limit of a run in bytes, /tmp and /workspace included")
	fs.Float64Var(&c.RunCPUs, "run-cpus", 0, "CPU share of a run in CPUs, e.g. 0.5 or 2 (cgroup cpu.max / CFS quota); a skill's [runtime] cpus may ask for less (0: no limit)")
	fs.StringVar(&c.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", "json", "json or console")
	fs.StringVar(&c.MCPTools, "mcp-tools", mcpfront.ToolsBoth, "MCP tools offered: skills (one per action skill), protocol (list_skills, run_code, …) or both")
	fs.IntVar(&c.MCPMaxSkillTools, "mcp-max-skill-tools", mcpfront.DefaultMaxSkillTools, "past this many action skills, MCP clients reach skills through the protocol tools only")
	registerEgressFlags(fs, c)
}

// loadConfig layers the config file and SKILLGATE_* environment under the
// command line. Values from the file and the environment are parsed by the
// flags themselves, so a bad value is an error, never a silent zero.
func loadConfig(cmd *cobra.Command) error {
	v := viper.New()
	fs := cmd.Flags()
	if err := v.BindPFlags(fs); err != nil {
		return err
	}
	v.SetEnvPrefix("SKILLGATE")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	if path, _ := fs.GetString("config"); path != "" {
		v.SetConfigFile(path)
		if err := v.ReadInConfig(); err != nil {
			return fmt.Errorf("config file: %w", err)
		}
		if err := checkKeys(v, fs); err != nil {
			return err
		}
	}
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || !v.IsSet(f.Name) {
			return
		}
		if err := fs.Set(f.Name, configValue(v, f.Name)); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.Name, err))
			return
		}
		if f.Deprecated != "" {
			// pflag writes its own notice into cobra's buffer, which
			// only the command line's parse errors print.
			fmt.Fprintf(cmd.ErrOrStderr(), "Flag --%s has been deprecated, %s\n", f.Name, f.Deprecated)
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return applyDeprecatedFlags(fs)
}

// deprecatedFlags are flag (and config-file key) names an earlier version
// had, each with the flag that replaced it: they are still accepted, with a
// warning, until a release notes their removal in docs/upgrading.md.
var deprecatedFlags = map[string]string{
	"sandbox-zygote": "sandbox-template",
}

// registerDeprecatedFlags defines the old names as hidden string flags of
// their own: applyDeprecatedFlags copies one into its replacement, so the
// new name, when given anywhere, wins over the old.
func registerDeprecatedFlags(fs *pflag.FlagSet) {
	for old, replacement := range deprecatedFlags {
		fs.String(old, "", "deprecated: use --"+replacement)
		_ = fs.MarkDeprecated(old, "use --"+replacement)
	}
}

// applyDeprecatedFlags sets each replacement flag that was given nowhere
// from its old name, when that was given (command line, file or
// environment).
func applyDeprecatedFlags(fs *pflag.FlagSet) error {
	for old, replacement := range deprecatedFlags {
		o, n := fs.Lookup(old), fs.Lookup(replacement)
		if o == nil || n == nil || !o.Changed || n.Changed {
			continue
		}
		if err := fs.Set(replacement, o.Value.String()); err != nil {
			return fmt.Errorf("%s: %w", old, err)
		}
	}
	return nil
}

// configValue is a flag's value from the file or the environment, as the
// flag parses it: a list in the file (http-allowed-origins: [a, b]) becomes
// the comma-separated form its flag takes.
func configValue(v *viper.Viper, name string) string {
	list, ok := v.Get(name).([]any)
	if !ok {
		return v.GetString(name)
	}
	items := make([]string, len(list))
	for i, item := range list {
		items[i] = fmt.Sprint(item)
	}
	return strings.Join(items, ",")
}

func checkKeys(v *viper.Viper, fs *pflag.FlagSet) error {
	var unknown []string
	for _, k := range v.AllKeys() {
		if fs.Lookup(k) == nil {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return fmt.Errorf("config file: unknown keys %s", strings.Join(unknown, ", "))
	}
	return nil
}

// validate checks what the packages' own validation does not.
func (c *serveConfig) validate() error {
	var errs []error
	if c.Listen == "" && c.TLSListen == "" && c.HTTPListen == "" {
		errs = append(errs, errors.New("nothing to serve: --listen, --tls-listen and --http-listen are all empty"))
	}
	if c.TLSListen != "" && (c.TLSCert == "" || c.TLSKey == "") {
		errs = append(errs, errors.New("--tls-listen needs --tls-cert and --tls-key"))
	}
	if c.TLSClientCA != "" && c.TLSListen == "" {
		errs = append(errs, errors.New("--tls-client-ca needs --tls-listen"))
	}
	if (c.HTTPTLSCert == "") != (c.HTTPTLSKey == "") {
		errs = append(errs, errors.New("--http-tls-cert and --http-tls-key go together"))
	}
	if c.HTTPTLSClientCA != "" && c.HTTPTLSCert == "" {
		errs = append(errs, errors.New("--http-tls-client-ca needs --http-tls-cert and --http-tls-key"))
	}
	if !(c.IdentityShare > 0 && c.IdentityShare <= 1) {
		errs = append(errs, fmt.Errorf("--identity-queued-share %v must be above 0 and at most 1", c.IdentityShare))
	}
	if c.MCPMaxSessions < 0 {
		errs = append(errs, errors.New("--mcp-max-sessions must not be negative (0 means no limit)"))
	}
	if c.MCPSessionIdle <= 0 {
		errs = append(errs, errors.New("--mcp-session-idle-timeout must be positive: idle sessions must end"))
	}
	errs = append(errs, c.validateLocal())
	return errors.Join(errs...)
}

// validateLocal checks the flags `skillgate mcp` shares with serve.
func (c *serveConfig) validateLocal() error {
	var errs []error
	if !slices.Contains([]string{mcpfront.ToolsSkills, mcpfront.ToolsProtocol, mcpfront.ToolsBoth}, c.MCPTools) {
		errs = append(errs, fmt.Errorf("--mcp-tools must be skills, protocol or both, not %q", c.MCPTools))
	}
	if c.MCPMaxSkillTools < 0 {
		errs = append(errs, errors.New("--mcp-max-skill-tools must not be negative"))
	}
	if c.SandboxMaxTemplates < 1 {
		errs = append(errs, errors.New("--sandbox-max-templates must be at least 1"))
	}
	if c.SandboxWarmMemory < 0 {
		errs = append(errs, errors.New("--sandbox-warm-memory must not be negative"))
	}
	if c.RunCPUs != 0 && !(c.RunCPUs >= sandbox.MinCPUs && c.RunCPUs <= sandbox.MaxCPUs) {
		errs = append(errs, fmt.Errorf("--run-cpus must be 0 or between %v and %d, not %v", sandbox.MinCPUs, sandbox.MaxCPUs, c.RunCPUs))
	}
	if c.SandboxWorkers < 0 {
		errs = append(errs, errors.New("--sandbox-workers must not be negative"))
	}
	if _, err := sandbox.ParseMode(c.SandboxMode); err != nil {
		errs = append(errs, fmt.Errorf("--sandbox-mode must be auto, root or rootless, not %q", c.SandboxMode))
	}
	if _, err := sandbox.ParseTemplateMode(c.SandboxTemplate); err != nil {
		errs = append(errs, fmt.Errorf("--sandbox-template must be auto, on or off, not %q", c.SandboxTemplate))
	}
	if _, err := sandbox.ParseIDMap(c.SandboxIDMap); err != nil {
		errs = append(errs, fmt.Errorf("--sandbox-idmap must be auto, subordinate or own, not %q", c.SandboxIDMap))
	}
	if c.SandboxCgroup != "" && !filepath.IsAbs(c.SandboxCgroup) {
		errs = append(errs, fmt.Errorf("--sandbox-cgroup must be an absolute path, not %q", c.SandboxCgroup))
	}
	if c.SandboxWorkDir != "" && !filepath.IsAbs(c.SandboxWorkDir) {
		errs = append(errs, fmt.Errorf("--sandbox-work-dir must be an absolute path, not %q", c.SandboxWorkDir))
	}
	if c.MaxBlobSize <= 0 {
		errs = append(errs, errors.New("--max-blob-size must be positive"))
	}
	if c.MaxBlobStoreBytes < 0 {
		errs = append(errs, errors.New("--max-blob-store-bytes must not be negative (0 means no limit)"))
	}
	if c.MaxPendingUploads < 1 {
		errs = append(errs, errors.New("--max-pending-uploads must be at least 1"))
	}
	if c.MaxRunOutputBytes < 1 {
		errs = append(errs, errors.New("--max-run-output-bytes must be positive"))
	}
	if c.RunRetention <= 0 {
		errs = append(errs, errors.New("--run-retention must be positive"))
	}
	errs = append(errs, c.validateRunBounds()...)
	if c.BlobTTL < 0 {
		errs = append(errs, errors.New("--blob-ttl must not be negative"))
	}
	if err := c.validateBlobStore(); err != nil {
		errs = append(errs, err)
	}
	if c.DrainDelay < 0 {
		errs = append(errs, errors.New("--drain-delay must not be negative"))
	}
	if c.MaxTotalQueued < -1 {
		errs = append(errs, errors.New("--max-total-queued-bytes must be -1 (no limit), 0 (derived) or positive"))
	}
	if c.MaxTotalQueued > 0 && c.MaxTotalQueued < int64(c.MaxMessageSize) {
		errs = append(errs, fmt.Errorf("--max-total-queued-bytes %d must hold at least one message (--max-message-size %d)", c.MaxTotalQueued, c.MaxMessageSize))
	}
	if c.DrainTimeout < 0 {
		errs = append(errs, errors.New("--drain-timeout must not be negative"))
	}
	if err := (httpfront.Options{AllowedOrigins: c.HTTPOrigins, AllowedHosts: c.HTTPHosts}).Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--http-allowed-origins/--http-allowed-hosts: %w", err))
	}
	for flag, v := range map[string]string{"--auth-authorization-url": c.AuthorizationURL, "--protocol-upgrade-url": c.UpgradeURL} {
		if v != "" && !absoluteHTTPURL(v) {
			errs = append(errs, fmt.Errorf("%s must be an absolute http or https URL, not %q", flag, v))
		}
	}
	errs = append(errs, c.validateEgress()...)
	errs = append(errs, c.validatePython()...)
	if !slices.Contains([]string{"json", "console"}, c.LogFormat) {
		errs = append(errs, fmt.Errorf("--log-format must be json or console, not %q", c.LogFormat))
	}
	return errors.Join(errs...)
}

func (c *serveConfig) session() session.Config {
	s := session.DefaultConfig()
	s.MaxMessageSize = c.MaxMessageSize
	s.KeepaliveInterval = c.KeepaliveInterval
	s.KeepaliveTimeout = c.KeepaliveTimeout
	s.FrameTimeout = c.FrameTimeout
	s.InitTimeout = c.InitTimeout
	s.WriteTimeout = c.WriteTimeout
	s.MaxInflight = c.MaxInflight
	s.MaxConnections = c.MaxConnections
	s.MaxQueuedBytes = c.MaxQueuedBytes
	s.DrainTimeout = c.DrainTimeout
	framedfront.Configure(&s)
	return s
}

// totalQueued is the size of the gateway-wide queued bytes budget: the
// flag when set, else a quarter of the memory the process may use (its
// cgroup's limit, or physical memory), and never below what 64 connections
// may each queue, so that a small box still serves.
func (c *serveConfig) totalQueued(memory int64) int64 {
	switch {
	case c.MaxTotalQueued > 0:
		return c.MaxTotalQueued
	case c.MaxTotalQueued < 0:
		return 0 // no limit
	}
	perConn := int64(c.MaxQueuedBytes)
	if perConn == 0 {
		perConn = int64(session.DefaultQueuedMessages * c.MaxMessageSize)
	}
	return max(memory/4, 64*perConn)
}

// limits gathers what Initialize advertises from the settings that own
// each value.
func (c *serveConfig) limits(sc session.Config) dispatch.Limits {
	return dispatch.Limits{
		MaxMessageSize:      sc.MaxMessageSize,
		MaxOutputBytes:      sandbox.MaxOutputBytes,
		LogsPreviewBytes:    sandbox.MaxLogsPreview,
		MaxBlobSize:         c.MaxBlobSize,
		DefaultRunTimeoutMS: c.RunTimeout.Milliseconds(),
		MaxRunTimeoutMS:     c.MaxRunTimeout.Milliseconds(),
		MaxInflight:         sc.MaxInflight,
	}
}

func (c *serveConfig) sandbox(log zerolog.Logger) sandbox.Config {
	s := sandbox.DefaultConfig()
	s.Python = c.Python
	s.Mode, _ = sandbox.ParseMode(c.SandboxMode) // validated
	s.Template, _ = sandbox.ParseTemplateMode(c.SandboxTemplate)
	s.IDMap, _ = sandbox.ParseIDMap(c.SandboxIDMap)
	s.CgroupDir = c.SandboxCgroup
	if c.SandboxWorkDir != "" {
		s.WorkDir = c.SandboxWorkDir
	}
	s.Workers = c.SandboxWorkers
	s.QueueSize = 0 // sandbox derives it from Workers
	s.WarmPool = c.SandboxWarmPool
	if s.WarmPool < 0 {
		// Two per worker: a run takes its sandbox in about a millisecond, a
		// cold start refills the pool in tens, so back-to-back runs on every
		// worker would otherwise drain it.
		s.WarmPool = 2 * c.SandboxWorkers
	}
	s.UIDBase = c.SandboxUIDBase
	s.WarmMemoryBytes = c.SandboxWarmMemory
	s.MaxTemplates = c.SandboxMaxTemplates
	s.DefaultTimeout = c.RunTimeout
	s.MaxTimeout = c.MaxRunTimeout
	s.MemoryBytes = c.RunMemory
	s.CPUs = c.RunCPUs
	s.MaxOutputBlobBytes = c.MaxBlobSize
	s.MaxRunOutputBytes = c.MaxRunOutputBytes
	s.Logger = log
	return s
}

// validateBlobStore checks --blob-store and the flags that go with it.
func (c *serveConfig) validateBlobStore() error {
	switch {
	case c.BlobStore == "" || c.BlobStore == "memory":
		if c.S3Endpoint != "" || c.S3Region != "" || c.S3PathStyle {
			return errors.New("--s3-endpoint, --s3-region and --s3-path-style need an s3:// --blob-store")
		}
		return nil
	case strings.HasPrefix(c.BlobStore, "s3://"):
		if _, _, err := s3blob.ParseURL(c.BlobStore); err != nil {
			return fmt.Errorf("--blob-store: %w", err)
		}
		return nil
	}
	return fmt.Errorf("--blob-store must be empty, \"memory\" or s3://bucket/prefix, not %q", c.BlobStore)
}

// validateRunBounds checks the bounds of the run records: positive, an
// identity's within the gateway's, and room for one run's record (its
// events are bounded to 2 MiB, its logs to 1 MiB more in the run object).
func (c *serveConfig) validateRunBounds() []error {
	var errs []error
	const minBytes = 4 << 20
	if c.RunMaxRecords <= 0 || c.RunMaxRecordsPerIdentity <= 0 {
		errs = append(errs, errors.New("--run-max-records and --run-max-records-per-identity must be positive"))
	} else if c.RunMaxRecordsPerIdentity > c.RunMaxRecords {
		errs = append(errs, errors.New("--run-max-records-per-identity must not exceed --run-max-records"))
	}
	if c.RunMaxRecordBytes < minBytes || c.RunMaxRecordBytesPerID < minBytes {
		errs = append(errs, fmt.Errorf("--run-max-record-bytes and --run-max-record-bytes-per-identity must be at least %d (4 MiB, room for one run's record)", minBytes))
	} else if c.RunMaxRecordBytesPerID > c.RunMaxRecordBytes {
		errs = append(errs, errors.New("--run-max-record-bytes-per-identity must not exceed --run-max-record-bytes"))
	}
	return errs
}

// absoluteHTTPURL reports whether s is an absolute http or https URL with
// a host, as a client can follow it.
func absoluteHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil
}
