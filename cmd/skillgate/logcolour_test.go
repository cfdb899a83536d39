package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: what is written to the returned
// terminal can be read from the master.
func openPTY(t *testing.T) (master, term *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { _ = master.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	term, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = term.Close() })
	return master, term
}

// The console log format is coloured on a terminal only: a redirected
// file or a pipe gets plain text, and so does a terminal with NO_COLOR.
func TestConsoleLogColourOnlyOnATerminal(t *testing.T) {
	const esc = "\x1b["
	logTo := func(w *os.File) {
		t.Helper()
		log, err := newLogger(w, "info", "console")
		require.NoError(t, err)
		log.Info().Str("k", "v").Msg("hello")
	}

	file, err := os.Create(filepath.Join(t.TempDir(), "gateway.log"))
	require.NoError(t, err)
	logTo(file)
	require.NoError(t, file.Close())
	data, err := os.ReadFile(file.Name())
	require.NoError(t, err)
	assert.Contains(t, string(data), "hello")
	assert.NotContains(t, string(data), esc, "no colour codes in a file")

	r, w, err := os.Pipe()
	require.NoError(t, err)
	logTo(w)
	require.NoError(t, w.Close())
	var piped bytes.Buffer
	_, err = piped.ReadFrom(r)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	assert.Contains(t, piped.String(), "hello")
	assert.NotContains(t, piped.String(), esc, "none in a pipe")

	var buf bytes.Buffer
	log, err := newLogger(&buf, "info", "console")
	require.NoError(t, err)
	log.Info().Msg("hello")
	assert.NotContains(t, buf.String(), esc, "none in a writer that is no file")

	readTerm := func() string {
		t.Helper()
		master, term := openPTY(t)
		logTo(term)
		require.NoError(t, master.SetReadDeadline(time.Now().Add(30*time.Second)), "a read that cannot hang")
		out := make([]byte, 4096)
		n, err := master.Read(out)
		require.NoError(t, err)
		return string(out[:n])
	}
	t.Setenv("NO_COLOR", "")
	got := readTerm()
	assert.Contains(t, got, "hello")
	assert.Contains(t, got, esc, "colour on a terminal")

	t.Setenv("NO_COLOR", "1")
	assert.NotContains(t, readTerm(), esc, "NO_COLOR turns it off")
}
