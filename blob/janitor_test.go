package blob

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFSStoreJanitorDefaultInterval: without SweepInterval the janitor
// sweeps every TTL/4, bounded to [1s, 1h], from the store's open; in
// virtual time, each case puts a blob at putAt and finds it at kept and
// gone at gone (both since the open):
//   - TTL 40 s: sweeps every 10 s, so the blob put at 0 is there at 39 s
//     and gone by the sweep at 40 s (with a longer interval it would stay);
//   - TTL 2 s: TTL/4 is 500 ms, but sweeps come every second: the blob put
//     at 100 ms expires at 2.1 s, is still there at 2.6 s (a sweep at
//     2.5 s would have taken it) and gone by the sweep at 3 s;
//   - TTL 8 h: TTL/4 is 2 h, but sweeps come hourly: the blob put at 1 ms
//     is gone by the sweep at 9 h (the next of a 2 h interval is at 10 h).
func TestFSStoreJanitorDefaultInterval(t *testing.T) {
	for _, tc := range []struct {
		name              string
		ttl               time.Duration
		putAt, kept, gone time.Duration
	}{
		{"ttl/4", 40 * time.Second, 0, 39 * time.Second, 40*time.Second + time.Millisecond},
		{"at least 1s", 2 * time.Second, 100 * time.Millisecond, 2600 * time.Millisecond, 3*time.Second + time.Millisecond},
		{"at most 1h", 8 * time.Hour, time.Millisecond, 9*time.Hour - time.Millisecond, 9*time.Hour + time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, err := OpenFSStore(FSOptions{Dir: t.TempDir(), TTL: tc.ttl, Logger: zerolog.Nop()})
				require.NoError(t, err)
				defer s.Close()
				opened := time.Now()
				time.Sleep(tc.putAt)
				id := s.NewID()
				_, err = s.Put(context.Background(), id, PutOptions{Kind: "text/plain"}, strings.NewReader("x"))
				require.NoError(t, err)
				time.Sleep(tc.kept - time.Since(opened))
				synctest.Wait()
				_, err = s.Stat(context.Background(), id)
				require.NoError(t, err, "%v after the open", tc.kept)
				time.Sleep(tc.gone - time.Since(opened))
				synctest.Wait()
				_, err = s.Stat(context.Background(), id)
				assert.ErrorIs(t, err, ErrNotFound, "%v after the open", tc.gone)
			})
		})
	}
}

// TestFSStoreOpenLogsNoSweepFailure: a sweep at open that succeeds logs
// nothing about it.
func TestFSStoreOpenLogsNoSweepFailure(t *testing.T) {
	var logs bytes.Buffer
	s, err := OpenFSStore(FSOptions{Dir: t.TempDir(), TTL: time.Hour, SweepInterval: time.Hour, Logger: zerolog.New(&logs)})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	assert.Contains(t, logs.String(), `"message":"blob store opened"`)
	assert.NotContains(t, logs.String(), "blob sweep at open")
}

// TestRunJanitorLogsFailedSweeps: the janitor sweeps at every interval
// and logs a sweep that failed, and only those; stopping it closes done.
func TestRunJanitorLogsFailedSweeps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		calls := 0
		sweep := func(context.Context) (int, error) {
			calls++
			if calls == 2 {
				return 0, errors.New("disk gone")
			}
			return 1, nil
		}
		stop, done := make(chan struct{}), make(chan struct{})
		go RunJanitor(stop, done, time.Minute, sweep, zerolog.New(&logs))
		time.Sleep(3*time.Minute + time.Second)
		synctest.Wait()
		close(stop)
		<-done
		assert.Equal(t, 3, calls)
		assert.Equal(t, `{"level":"warn","error":"disk gone","message":"blob janitor"}`+"\n", logs.String())
	})
}
