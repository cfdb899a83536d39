package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPythonFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "skillgate.yaml")
	require.NoError(t, os.WriteFile(file, []byte("python-find-links: [/srv/wheels, \"https://wheels.example/w/\"]\npython-preload: [pandas, dateutil.parser]\n"), 0o600))
	cfg, err := parseServe(t, "--config", file, "--python-index-url", "https://pypi.example/simple")
	require.NoError(t, err)
	assert.Equal(t, []string{"/srv/wheels", "https://wheels.example/w/"}, cfg.PythonFindLinks)
	assert.Equal(t, []string{"pandas", "dateutil.parser"}, cfg.PythonPreload)
	require.NoError(t, cfg.validate())

	cfg, err = parseServe(t, "--python-find-links", "a,b", "--python-find-links", "c")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, cfg.PythonFindLinks, "repeatable")

	for args, want := range map[[2]string]string{
		{"--python-index-url", "ftp://x/"}:        "not an http, https or file URL",
		{"--python-find-links", "gopher://x/"}:    "not an http, https or file URL",
		{"--python-preload", "pandas,import"}:     `"import" is not a Python module name`,
		{"--python-requirements", "/etc/req.txt"}: "--python-requirements needs a package source",
	} {
		cfg, err := parseServe(t, args[0], args[1])
		require.NoError(t, err)
		assert.ErrorContains(t, cfg.validate(), want, args)
	}
}

func TestBaseRequirementsFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.txt")
	bad := filepath.Join(dir, "bad.txt")
	require.NoError(t, os.WriteFile(good, []byte("# base\nacme-tool==1.0\n"), 0o600))
	require.NoError(t, os.WriteFile(bad, []byte("-r other.txt\n"), 0o600))
	cfg := &serveConfig{PythonRequirements: good}
	reqs, err := cfg.baseRequirements()
	require.NoError(t, err)
	assert.Len(t, reqs, 1)
	cfg.PythonRequirements = bad
	_, err = cfg.baseRequirements()
	assert.ErrorContains(t, err, "line 1: option -r is not accepted here")
	cfg.PythonRequirements = filepath.Join(dir, "missing.txt")
	_, err = cfg.baseRequirements()
	assert.ErrorContains(t, err, "--python-requirements")
}
