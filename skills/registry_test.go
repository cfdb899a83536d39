package skills

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	eventually = 10 * time.Second
	tick       = 20 * time.Millisecond
)

// A broken edit keeps the previous snapshot of that folder; a fixed edit
// replaces it; removing the folder removes the skill.
func TestReloadKeepsPreviousOnBrokenEdit(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, merge(actionPackage("f", "acme.keep.x", "1.0.0"), actionPackage("g", "acme.other.x", "1.0.0")))
	r, logs := newRegistry(t, Options{Dir: root})
	v1, err := r.Catalog().Resolve("acme.keep.x", "")
	require.NoError(t, err)

	writeTree(t, root, map[string]string{"f/skill.toml": strings.Replace(actionTOML("acme.keep.x", "1.1.0"), `kind = "action"`, `kind = "tool"`, 1)})
	rep := lastReport(t, r)
	p := reportFor(t, rep, "f")
	assert.Equal(t, StatusKept, p.Status)
	assert.Equal(t, "1.0.0", p.Version)
	assert.Equal(t, []string{"skill.toml:/kind"}, fields(p.Violations))
	got, err := r.Catalog().Resolve("acme.keep.x", "")
	require.NoError(t, err)
	assert.Same(t, v1, got, "the old snapshot is still served")
	assert.Len(t, logLines(t, logs, "skill package invalid, previous snapshot kept"), 1)

	lastReport(t, r) // still broken: still kept
	got, _ = r.Catalog().Resolve("acme.keep.x", "")
	assert.Same(t, v1, got)

	writeTree(t, root, map[string]string{"f/skill.toml": actionTOML("acme.keep.x", "1.1.0")})
	rep = lastReport(t, r)
	assert.Equal(t, StatusLoaded, reportFor(t, rep, "f").Status)
	assert.Equal(t, []string{"1.1.0"}, r.Catalog().Versions("acme.keep.x"), "the folder now serves 1.1.0 only")

	require.NoError(t, os.RemoveAll(filepath.Join(root, "f")))
	lastReport(t, r)
	_, err = r.Catalog().Resolve("acme.keep.x", "")
	assert.ErrorIs(t, err, ErrSkillNotFound)
	_, err = r.Catalog().Resolve("acme.other.x", "")
	assert.NoError(t, err)

	// A folder broken from the start has nothing to keep.
	writeTree(t, root, map[string]string{"h/skill.toml": "broken", "h/SKILL.md": packageMD("h")})
	assert.Equal(t, StatusSkipped, reportFor(t, lastReport(t, r), "h").Status)
}

// Readers never see a torn catalog while reloads swap versions and break
// and fix packages underneath them.
func TestReloadUnderConcurrentReaders(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a", "b", "c"} {
		writeTree(t, root, actionPackage(d, "acme.conc."+d, "1.0.0"))
	}
	r, _ := newRegistry(t, Options{Dir: root})
	stop := make(chan struct{})
	var reads atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				cat := r.Catalog() // one catalog for the whole "call"
				for _, d := range []string{"a", "b", "c"} {
					s, err := cat.Resolve("acme.conc."+d, "")
					if !assert.NoError(t, err) {
						return
					}
					data, _, err := s.ReadFile("code/main.py")
					assert.NoError(t, err)
					assert.Contains(t, string(data), s.Manifest.Version, "file content matches its snapshot's version")
				}
				page, err := cat.List(ListQuery{Namespace: "acme", Limit: 2})
				assert.NoError(t, err)
				if page.NextCursor != "" {
					_, err = r.Catalog().List(ListQuery{Namespace: "acme", Limit: 2, Cursor: page.NextCursor})
					assert.NoError(t, err, "a cursor from an older catalog works in the newer one")
				}
				reads.Add(1)
			}
		})
	}
	for i := range 30 {
		v := "1.0." + string(rune('0'+i%10))
		writeTree(t, root, actionPackage("a", "acme.conc.a", v))
		if i%3 == 0 {
			writeTree(t, root, map[string]string{"b/skill.toml": "not toml ["})
		} else {
			writeTree(t, root, actionPackage("b", "acme.conc.b", v))
		}
		_, err := r.Reload()
		require.NoError(t, err)
	}
	close(stop)
	wg.Wait()
	assert.Positive(t, reads.Load())
}

func TestWatchReloads(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, actionPackage("a", "acme.watch.a", "1.0.0"))
	r, logs := newRegistry(t, Options{Dir: root, Watch: true, WatchDebounce: 20 * time.Millisecond})

	resolves := func(name, version string) func() bool {
		return func() bool {
			s, err := r.Catalog().Resolve(name, "")
			return err == nil && s.Manifest.Version == version
		}
	}
	// A new package in a new nested folder.
	writeTree(t, root, actionPackage("team/new", "acme.watch.new", "1.0.0"))
	require.Eventually(t, resolves("acme.watch.new", "1.0.0"), eventually, tick)

	// An edit inside a folder created after the watch started.
	writeTree(t, root, map[string]string{"team/new/skill.toml": actionTOML("acme.watch.new", "1.0.1")})
	require.Eventually(t, resolves("acme.watch.new", "1.0.1"), eventually, tick)

	// An editor's save: write a temp file, rename it over the original.
	tmp := filepath.Join(root, "a", ".skill.toml.swp")
	require.NoError(t, os.WriteFile(tmp, []byte(actionTOML("acme.watch.a", "2.0.0")), 0o644))
	require.NoError(t, os.Rename(tmp, filepath.Join(root, "a", "skill.toml")))
	require.Eventually(t, resolves("acme.watch.a", "2.0.0"), eventually, tick)

	// A broken save is reloaded, reported, and keeps 2.0.0 served.
	writeTree(t, root, map[string]string{"a/skill.toml": "name = "})
	require.Eventually(t, func() bool {
		return len(logLines(t, logs, "skill package invalid, previous snapshot kept")) > 0
	}, eventually, tick)
	assert.True(t, resolves("acme.watch.a", "2.0.0")())

	// Removing a folder removes its skill.
	require.NoError(t, os.RemoveAll(filepath.Join(root, "team")))
	require.Eventually(t, func() bool {
		_, err := r.Catalog().Resolve("acme.watch.new", "")
		return err != nil
	}, eventually, tick)
}

func TestBuiltinGuide(t *testing.T) {
	root := t.TempDir()
	shadow := "name = \"skills.protocol.guide\"\nversion = \"9.9.9\"\ndescription = \"fake\"\nkind = \"instruction\"\n"
	writeTree(t, root, map[string]string{"shadow/skill.toml": shadow, "shadow/SKILL.md": packageMD("fake")})
	r, _ := newRegistry(t, Options{Dir: root})
	rep := lastReport(t, r)
	assert.Equal(t, []string{"skill.toml:/name"}, fields(reportFor(t, rep, "shadow").Violations))

	g, err := r.Catalog().Resolve(GuideName, "")
	require.NoError(t, err)
	assert.Equal(t, "1.0.0", g.Manifest.Version)
	assert.Equal(t, KindInstruction, g.Manifest.Kind)
	assert.Equal(t, "skills", g.Namespace)
	assert.Equal(t, SourceBuiltin, g.Source)
	assert.Empty(t, g.Dir)
	md, _, err := g.ReadFile("SKILL.md")
	require.NoError(t, err)
	assert.Equal(t, Guide(), string(md))
	assert.True(t, strings.HasSuffix(Guide(), g.Body))

	page, err := r.Catalog().List(ListQuery{Namespace: "skills"})
	require.NoError(t, err)
	require.Len(t, page.Skills, 1)
	assert.Equal(t, GuideName, page.Skills[0].Manifest.Name)

	// The guide names the real methods and parameters.
	for _, word := range []string{
		"list_skills", "describe_skill", "read_skill_file", "execute_skill", "run_code", "create_blob", "read_blob",
		"namespace", "detail", "cursor", "next_cursor", "input_blobs", "timeout_ms", "mount_skills", "entrypoint",
		"limits", "sample_head", "sample_tail", "max_bytes", "blob_id", "output_blobs", "logs_preview",
		"from runtime import blobs, log", "from skills.", "string_code", "status", "failed", "retry", "4 KB", "2 KB",
	} {
		assert.Contains(t, Guide(), word)
	}
}
