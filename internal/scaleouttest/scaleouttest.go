// Package scaleouttest starts the real outside parts the scale-out tests
// need, on loopback: a MinIO server and HAProxy. The binaries come from
// SKILLGATE_MINIO (default: minio on PATH, then
// $HOME/.cache/skillgate/minio-<version>/minio, where .ci/install-scaleout
// builds it)
// and SKILLGATE_HAPROXY (default: haproxy on PATH). A test that needs a
// missing binary is skipped, and fails instead when
// SKILLGATE_REQUIRE_SCALEOUT=1 (CI), so CI never passes by skipping.
package scaleouttest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// MinIO credentials of the test server.
const (
	AccessKey = "skillgate-test"
	SecretKey = "skillgate-test-secret"
)

// Binary finds a program by its environment variable, PATH and the
// extra places, or skips (fails under SKILLGATE_REQUIRE_SCALEOUT=1).
func Binary(t testing.TB, env, name string, extra ...string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		missing(t, fmt.Sprintf("%s=%s: no such file", env, p))
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, p := range extra {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	missing(t, fmt.Sprintf("%s not found (set %s, or run .ci/install-scaleout)", name, env))
	return ""
}

func missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("SKILLGATE_REQUIRE_SCALEOUT") == "1" {
		t.Fatalf("%s; SKILLGATE_REQUIRE_SCALEOUT=1 forbids skipping", why)
	}
	t.Skip(why)
}

// MinIOBinary finds the minio server binary; besides SKILLGATE_MINIO and
// PATH it looks where .ci/install-scaleout caches it.
func MinIOBinary(t testing.TB) string {
	home, _ := os.UserHomeDir()
	cached, _ := filepath.Glob(filepath.Join(home, ".cache", "skillgate", "minio-*", "minio"))
	return Binary(t, "SKILLGATE_MINIO", "minio", cached...)
}

// HAProxyBinary finds haproxy.
func HAProxyBinary(t testing.TB) string {
	return Binary(t, "SKILLGATE_HAPROXY", "haproxy", "/usr/sbin/haproxy")
}

// MinIO is a running test server.
type MinIO struct {
	// Endpoint is its http:// URL on loopback.
	Endpoint string
	cmd      *exec.Cmd
}

// StartMinIO starts a MinIO server over a temp folder; it is stopped and
// its data removed when the test ends. It sets the AWS_* credential
// variables for the test, as an operator would.
func StartMinIO(t testing.TB) *MinIO {
	t.Helper()
	bin := MinIOBinary(t)
	addr, console := FreePort(t), FreePort(t)
	cmd := exec.Command(bin, "server", "--quiet", "--address", addr, "--console-address", console, t.TempDir())
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+AccessKey, "MINIO_ROOT_PASSWORD="+SecretKey,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off", "HOME="+t.TempDir())
	logf, err := os.Create(filepath.Join(t.TempDir(), "minio.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start minio: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logf.Close()
	})
	m := &MinIO{Endpoint: "http://" + addr, cmd: cmd}
	// /minio/health/ready answers 200 while the server is still starting;
	// /cluster waits for the bucket metadata start-up, which lists the
	// buckets and heals (recreates) each one a moment later: a bucket
	// made and removed in between comes back.
	WaitHTTP(t, m.Endpoint+"/minio/health/cluster", logf.Name())
	t.Setenv("AWS_ACCESS_KEY_ID", AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", SecretKey)
	return m
}

// FreePort returns a loopback address that was free a moment ago.
func FreePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// WaitHTTP polls url until it answers 200 (a safety net of a minute).
func WaitHTTP(t testing.TB, url, logPath string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	log, _ := os.ReadFile(logPath)
	t.Fatalf("%s did not become ready; log:\n%s", url, log)
}
