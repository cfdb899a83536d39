package main

import (
	"fmt"

	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/skills"
)

// openSkills loads the skill registry and registers its metrics.
func openSkills(cfg *serveConfig, log zerolog.Logger, m *metrics.Metrics) (*skills.Registry, error) {
	reloads := m.SkillReloads
	reg, err := skills.NewRegistry(skills.Options{
		Dir:    cfg.SkillsDir,
		Logger: log.With().Str("component", "skills").Logger(),
		Watch:  cfg.WatchSkills && cfg.SkillsDir != "",
		OnReload: func(c *skills.Catalog, r skills.LoadReport) {
			reloads.WithLabelValues("ok").Inc()
			log.Info().Int("skills", c.Len()).Int("packages", len(r.Packages)).Msg("skills loaded")
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

// openBlobs opens the blob store: files under --data-dir, or memory.
func openBlobs(cfg *serveConfig, log zerolog.Logger, m *metrics.Metrics) (skills.BlobStore, error) {
	var store skills.BlobStore
	if cfg.DataDir == "" {
		log.Warn().Msg("blobs are kept in memory and lost on restart; set --data-dir to keep them")
		store = skills.NewMemStore(skills.MemOptions{MaxBlobSize: cfg.MaxBlobSize, TTL: cfg.BlobTTL})
	} else {
		fs, err := skills.OpenFSStore(skills.FSOptions{
			Dir: cfg.DataDir, MaxBlobSize: cfg.MaxBlobSize, TTL: cfg.BlobTTL,
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
	return store, nil
}
