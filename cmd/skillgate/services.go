package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/blob/s3blob"

	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/pyenv"
	"github.com/skillgate/skillgate/runs"
	"github.com/skillgate/skillgate/runs/objstore"
	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/skills"
)

// openSkills loads the skill registry and registers its metrics.
// afterReload runs after every successful load (the MCP front door's
// refresh); it may be called before the registry is returned.
// envs builds the environments skills declare (nil: declaring
// requirements is a load error); a finished build also runs afterReload.
func openSkills(cfg *serveConfig, log zerolog.Logger, m *metrics.Metrics, envs *pyenv.Builder, afterReload func()) (*skills.Registry, error) {
	reloads := m.SkillReloads
	reg, err := skills.NewRegistry(skills.Options{
		Dir:    cfg.SkillsDir,
		Logger: log.With().Str("component", "skills").Logger(),
		Watch:  cfg.WatchSkills && cfg.SkillsDir != "",
		OnReload: func(c *skills.Catalog, r skills.LoadReport) {
			reloads.WithLabelValues("ok").Inc()
			log.Info().Int("skills", c.Len()).Int("packages", len(r.Packages)).
				Int("building_environment", r.Count(skills.StatusBuilding)).Msg("skills loaded")
			afterReload()
		},
		Environments: envs,
		OnChange: func(c *skills.Catalog, _ skills.LoadReport) {
			log.Info().Int("skills", c.Len()).Int("building_environment", len(c.Building())).Msg("skill environment settled")
			afterReload()
		},
	})
	if err != nil {
		return nil, fmt.Errorf("--skills-dir: %w", err)
	}
	m.GaugeFunc("skills", "loaded", "Skill versions currently served.", func() float64 {
		return float64(reg.Catalog().Len())
	})
	return reg, nil
}

// reloadSkills reloads on SIGHUP, keeping the previous catalog on failure.
func reloadSkills(reg *skills.Registry, log zerolog.Logger, m *metrics.Metrics) {
	if _, err := reg.Reload(); err != nil {
		m.SkillReloads.WithLabelValues("error").Inc()
		log.Error().Err(err).Msg("skill reload failed; the previous skills stay served")
	}
}

// openRuns opens the run registry: records in the bucket of an S3 blob
// store (shared by the replicas), under --data-dir/runs, or in memory.
func openRuns(cfg *serveConfig, log zerolog.Logger, blobs blob.Store) (*runs.Registry, error) {
	rc := runs.Config{Retention: cfg.RunRetention, Logger: log.With().Str("component", "runs").Logger(),
		Bounds: runs.Bounds{MaxRecords: cfg.RunMaxRecords, MaxBytes: cfg.RunMaxRecordBytes,
			MaxOwnerRecords: cfg.RunMaxRecordsPerIdentity, MaxOwnerBytes: cfg.RunMaxRecordBytesPerID}}
	if strings.HasPrefix(cfg.BlobStore, "s3://") {
		rc.Store = objstore.New(blobs.Objects())
	} else if cfg.DataDir != "" {
		st, err := runs.NewFileStore(filepath.Join(cfg.DataDir, "runs"))
		if err != nil {
			return nil, fmt.Errorf("--data-dir: %w", err)
		}
		rc.Store = st
	}
	reg, err := runs.Open(context.Background(), rc)
	if err != nil {
		return nil, fmt.Errorf("--data-dir: %w", err)
	}
	return reg, nil
}

// openBlobs opens the blob store: a bucket, files under --data-dir, or
// memory.
func openBlobs(ctx context.Context, cfg *serveConfig, log zerolog.Logger, m *metrics.Metrics) (blob.Store, error) {
	var store blob.Store
	if strings.HasPrefix(cfg.BlobStore, "s3://") {
		s, err := openS3(ctx, cfg, log)
		if err != nil {
			return nil, err
		}
		store = s
	} else if cfg.DataDir == "" || cfg.BlobStore == "memory" {
		log.Warn().Msg("blobs are kept in memory and lost on restart; set --data-dir to keep them")
		store = blob.NewMemStore(blob.MemOptions{MaxBlobSize: cfg.MaxBlobSize, MaxStoreBytes: cfg.MaxBlobStoreBytes, TTL: cfg.BlobTTL})
	} else {
		fs, err := blob.OpenFSStore(blob.FSOptions{
			Dir: cfg.DataDir, MaxBlobSize: cfg.MaxBlobSize, MaxStoreBytes: cfg.MaxBlobStoreBytes, TTL: cfg.BlobTTL,
			Logger: log.With().Str("component", "blobs").Logger(),
		})
		if err != nil {
			return nil, fmt.Errorf("--data-dir: %w", err)
		}
		store = fs
	}
	m.GaugeFunc("blobstore", "blobs", "Blobs held by the blob store.", func() float64 {
		n, _ := store.Usage()
		return float64(n)
	})
	m.GaugeFunc("blobstore", "bytes", "Bytes held by the blob store.", func() float64 {
		_, b := store.Usage()
		return float64(b)
	})
	m.GaugeFunc("blobstore", "quota_bytes", "The blob store's byte quota (--max-blob-store-bytes); 0 means none.", func() float64 {
		return float64(cfg.MaxBlobStoreBytes)
	})
	return store, nil
}

// openAuth loads the auth file, or decides whether the gateway may run open:
// only when every client-facing listener is on loopback, or when told to.
// The Store's reloads end the streams whose credential they removed
// (auth.UntilRevoked); nothing here relays them.
func openAuth(ctx context.Context, cfg *serveConfig, log zerolog.Logger) (auth.Authenticator, *auth.Store, error) {
	if cfg.AuthFile == "" {
		addrs := []string{cfg.Listen, cfg.TLSListen, cfg.HTTPListen}
		if _, err := auth.AnonymousAllowed(addrs, cfg.AllowAnonymous); err != nil {
			return nil, nil, err
		}
		ev := log.Warn()
		if open := auth.NonLoopback(addrs); len(open) > 0 {
			ev = ev.Strs("non_loopback", open)
		}
		ev.Msg("no --auth-file: every client is anonymous and may call every method")
		return auth.NewOpen(auth.Limits{}), nil, nil
	}
	// Every method the gateway serves may be granted: the names come from
	// the dispatcher's method table.
	store, err := auth.Load(cfg.AuthFile, auth.Options{
		Logger: log.With().Str("component", "auth").Logger(), Methods: dispatch.GrantableMethods(),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("--auth-file: %w", err)
	}
	if _, err := store.Watch(ctx); err != nil {
		log.Warn().Err(err).Msg("cannot watch the auth file; SIGHUP still reloads it")
	}
	log.Info().Strs("identities", store.Policy().Names()).Msg("authentication on")
	return store, store, nil
}

// openSandbox starts the sandbox runner after checking that isolation works
// here. When it does not, execution is refused with the reason while the
// rest of the gateway serves: code never runs unisolated.
func openSandbox(cfg *serveConfig, log zerolog.Logger, m *metrics.Metrics) (*sandbox.Runner, string) {
	if cfg.SandboxWorkers == 0 {
		log.Info().Msg("code execution is off (--sandbox-workers 0)")
		return nil, "code execution is turned off on this gateway (--sandbox-workers 0)"
	}
	slog := log.With().Str("component", "sandbox").Logger()
	runner, err := sandbox.New(cfg.sandbox(slog))
	if err != nil {
		log.Error().Err(err).Msg("isolation does not work on this machine: execute_skill and run_code are refused")
		return nil, "isolation does not work on this machine: " + err.Error()
	}
	workers := float64(cfg.SandboxWorkers)
	m.GaugeFunc("sandbox", "workers", "Runs the sandbox executes at once (--sandbox-workers).", func() float64 { return workers })
	m.GaugeFunc("sandbox", "running", "Runs holding a sandbox worker.", func() float64 { return float64(runner.Stats().Running) })
	m.GaugeFunc("sandbox", "queue_depth", "Runs waiting for a sandbox worker.", func() float64 { return float64(runner.Stats().Queued) })
	m.GaugeFunc("sandbox", "warm_ready", "Pre-started sandboxes ready for a run.", func() float64 { return float64(runner.Stats().WarmReady) })
	m.GaugeFunc("sandbox", "warm_sandbox_bytes", "Memory one warm sandbox takes (proportional set size), measured at start-up.",
		func() float64 { return float64(runner.WarmSandboxBytes()) })
	m.GaugeFunc("sandbox", "template_restarts", "Sandbox templates that exited and were replaced.",
		func() float64 { return float64(runner.TemplateRestarts()) })
	m.GaugeFunc("sandbox", "templates", "Sandbox templates running, one per Python environment in use (--sandbox-max-templates).",
		func() float64 { return float64(runner.Templates().Count) })
	m.GaugeFunc("sandbox", "template_bytes", "Memory the sandbox templates take together (proportional set sizes, measured at each start).",
		func() float64 { return float64(runner.Templates().Bytes) })
	return runner, ""
}

// sandboxDetails is what /readyz says about execution: which mechanism
// enforces each limit (as the sandbox's self-check found it), or why runs
// are refused.
func sandboxDetails(r *sandbox.Runner, unavailable string) string {
	if r == nil {
		return "sandbox: unavailable: " + strings.Join(strings.Fields(unavailable), " ")
	}
	var b strings.Builder
	for _, kv := range r.Enforcement().Pairs() {
		fmt.Fprintf(&b, "sandbox.%s: %s\n", kv[0], kv[1])
	}
	return b.String()
}

// openS3 opens the s3:// --blob-store, with credentials from the standard
// AWS variables and files.
func openS3(ctx context.Context, cfg *serveConfig, log zerolog.Logger) (blob.Store, error) {
	bucket, prefix, err := s3blob.ParseURL(cfg.BlobStore)
	if err != nil {
		return nil, fmt.Errorf("--blob-store: %w", err)
	}
	if cfg.DataDir != "" {
		log.Info().Str("data_dir", cfg.DataDir).Msg("blobs are kept in the bucket; --data-dir is not used for them")
	}
	if cfg.MaxBlobStoreBytes > 0 {
		log.Warn().Msg("--max-blob-store-bytes and identities' blob quotas are not enforced on an s3:// blob store; use a bucket quota")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := s3blob.Open(ctx, s3blob.Options{
		Bucket: bucket, Prefix: prefix, Endpoint: cfg.S3Endpoint, Region: cfg.S3Region, PathStyle: cfg.S3PathStyle,
		MaxBlobSize: cfg.MaxBlobSize, TTL: cfg.BlobTTL, Logger: log.With().Str("component", "blobs").Logger(),
	})
	if err != nil {
		return nil, fmt.Errorf("--blob-store %s: %w", cfg.BlobStore, err)
	}
	log.Info().Str("bucket", bucket).Str("prefix", prefix).Msg("blobs kept in S3")
	return s, nil
}

// uploadSweepInterval: uploads expire an hour after their last chunk;
// sweeping every few minutes keeps their leftovers short-lived.
const uploadSweepInterval = 5 * time.Minute

// sweepUploads removes expired uploads until ctx ends. Every replica
// sweeps; they only repeat each other's deletions.
func sweepUploads(ctx context.Context, u *blob.Uploads, log zerolog.Logger) {
	t := time.NewTicker(uploadSweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := u.Sweep(ctx); err != nil && ctx.Err() == nil {
				log.Warn().Err(err).Msg("upload sweep")
			} else if n > 0 {
				log.Debug().Int("removed", n).Msg("expired uploads removed")
			}
		}
	}
}
