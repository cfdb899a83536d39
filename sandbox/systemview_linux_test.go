package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The view holds the generated files and the allow-listed host entries,
// symlinks kept as symlinks, and nothing else of the host's /etc.
func TestSystemViewCopiesOnlyTheAllowList(t *testing.T) {
	host := t.TempDir()
	for p, content := range map[string]string{
		"shadow": "root:$6$secret", "sudoers": "ALL", "ssh/ssh_host_ed25519_key": "KEY",
		"ssl/private/server.key": "KEY", "ssl/certs/ca-certificates.crt": "CERTS", "ssl/openssl.cnf": "cnf",
		"machine-id": "id", "resolv.conf": "nameserver 10.0.0.1", "skillgate/auth.toml": "token",
		"mime.types": "text/csv csv", "passwd": "root:x:0:0::/root:/bin/bash\ndaemon:x:1:1::/:/bin/sh\n",
	} {
		require.NoError(t, os.MkdirAll(filepath.Join(host, filepath.Dir(p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(host, p), []byte(content), 0o600))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(host, "alternatives"), 0o755))
	require.NoError(t, os.Symlink("/usr/lib/x86_64-linux-gnu/blas/libblas.so.3", filepath.Join(host, "alternatives/libblas.so.3-x86_64-linux-gnu")))
	require.NoError(t, os.Symlink("/usr/share/zoneinfo/Europe/Paris", filepath.Join(host, "localtime")))

	dst := filepath.Join(t.TempDir(), "etc")
	require.NoError(t, buildSystemView(dst, host))
	var got []string
	require.NoError(t, filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		if !d.IsDir() {
			rel, _ := filepath.Rel(dst, p)
			got = append(got, rel)
		}
		return nil
	}))
	slices.Sort(got)
	assert.Equal(t, []string{"alternatives/libblas.so.3-x86_64-linux-gnu", "group", "hostname", "hosts", "localtime",
		"mime.types", "nsswitch.conf", "passwd", "ssl/certs/ca-certificates.crt", "ssl/openssl.cnf"}, got)
	target, err := os.Readlink(filepath.Join(dst, "localtime"))
	require.NoError(t, err)
	assert.Equal(t, "/usr/share/zoneinfo/Europe/Paris", target)
	passwd, err := os.ReadFile(filepath.Join(dst, "passwd"))
	require.NoError(t, err)
	assert.NotContains(t, string(passwd), "daemon", "users are the run's own, not the host's")
	st, err := os.Stat(filepath.Join(dst, "ssl/certs/ca-certificates.crt"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), st.Mode().Perm(), "readable by the run's uid whatever the host's mode")
	for _, e := range systemView {
		_, generated := generatedEtc[e.path]
		assert.False(t, generated, "%s is both generated and copied", e.path)
	}
}

// hostHasLibraries reports whether Debian's Python libraries of the real
// skills are installed (.ci/setup installs them; CI requires them).
func hostHasLibraries(t *testing.T) {
	t.Helper()
	err := exec.Command("/usr/bin/python3", "-c", "import numpy, pandas, matplotlib, openpyxl, docx, lxml, reportlab").Run()
	if err != nil {
		if os.Getenv("SKILLGATE_REQUIRE_SANDBOX") == "1" {
			t.Fatalf("Debian's python3-numpy, -pandas, -matplotlib, -openpyxl, -docx, -lxml and -reportlab are required (.ci/setup): %v", err)
		}
		t.Skipf("Debian's Python libraries are not installed: %v", err)
	}
}

const realLibrariesCode = `
import io, json, mimetypes, os, ssl, time

def main(args):
    out = {}
    import numpy as np
    a = np.arange(9, dtype=float).reshape(3, 3)
    out["numpy"] = float((a @ a.T).trace())
    out["lapack"] = round(float(np.linalg.det(a + np.eye(3))), 6)
    import pandas as pd
    df = pd.DataFrame({"k": ["a", "b", "a"], "v": [1, 2, 3]})
    out["pandas"] = df.groupby("k")["v"].sum().to_dict()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1, 2], [0, 1, 4])
    png = io.BytesIO()
    fig.savefig(png, format="png")
    from runtime import blobs
    out["plot"] = blobs.write_bytes(png.getvalue(), kind="image/png")
    import openpyxl
    wb = openpyxl.Workbook()
    wb.active["A1"] = 42
    xlsx = io.BytesIO()
    wb.save(xlsx)
    out["openpyxl"] = openpyxl.load_workbook(io.BytesIO(xlsx.getvalue())).active["A1"].value
    import docx
    d = docx.Document()
    d.add_paragraph("hello")
    d.save(io.BytesIO())
    out["docx"] = d.paragraphs[0].text
    from lxml import etree
    out["lxml"] = etree.fromstring(b"<a><b>x</b></a>").findtext("b")
    from reportlab.pdfgen import canvas
    pdf = io.BytesIO()
    c = canvas.Canvas(pdf)
    c.drawString(100, 750, "hello")
    c.save()
    out["reportlab"] = pdf.getvalue()[:5].decode()
    out["cas"] = ssl.create_default_context().cert_store_stats()["x509_ca"]
    out["mime"] = mimetypes.guess_type("x.csv")[0]
    out["tz"] = time.tzname[0]
    out["etc"] = sorted(os.listdir("/etc"))
    return out
`

// Debian's libraries that real skills import work inside real runs, on the
// template's path and on the path that starts every sandbox from scratch,
// and the run's /etc holds the allow-list and nothing secret.
func TestSystemViewRealLibraries(t *testing.T) {
	hostHasLibraries(t)
	for _, mode := range []TemplateMode{TemplateOn, TemplateOff} {
		t.Run(string(mode), func(t *testing.T) {
			r := ownRunner(t, func(c *Config) { c.Template = mode; c.MemoryBytes = 512 << 20 })
			res := run(t, r, realLibrariesCode, nil, withTimeout(2*time.Minute), func(j *Job) { j.OutputBlobIDs = []string{"blob:plot"} })
			out := output(t, res)
			assert.Equal(t, 204.0, out["numpy"])
			assert.Equal(t, -5.0, out["lapack"], "LAPACK through /etc/alternatives")
			assert.Equal(t, map[string]any{"a": 4.0, "b": 2.0}, out["pandas"])
			assert.Equal(t, 42.0, out["openpyxl"])
			assert.Equal(t, "hello", out["docx"])
			assert.Equal(t, "x", out["lxml"])
			assert.Equal(t, "%PDF-", out["reportlab"])
			assert.Greater(t, out["cas"], 0.0, "the host's CA store is in the view")
			assert.Equal(t, "text/csv", out["mime"])
			require.Len(t, res.OutputBlobs, 1)
			assert.Equal(t, "image/png", res.OutputBlobs[0].Kind)
			assert.True(t, strings.HasPrefix(string(res.OutputBlobs[0].Data), "\x89PNG"), "a PNG")
			allowed := map[string]bool{}
			for _, e := range systemView {
				allowed[strings.SplitN(e.path, "/", 2)[0]] = true
			}
			for name := range generatedEtc {
				allowed[name] = true
			}
			for _, name := range out["etc"].([]any) {
				assert.True(t, allowed[name.(string)], "/etc/%s is not in the allow-list", name)
			}
			for _, secret := range []string{"shadow", "gshadow", "sudoers", "ssh", "machine-id", "resolv.conf", "skillgate"} {
				assert.NotContains(t, out["etc"], secret)
			}
		})
	}
}

// HTTPS through the egress proxy verifies against the host's trust store
// as the run's view holds it: a site whose CA the store holds is reached
// with Python's default context, and the same site fails verification for
// a run whose store lacks the CA. The store is a copy of the host's with
// the test CA added, given as the view's source: the host's own store is
// not touched.
func TestSystemViewHTTPSVerifiesAgainstTheHostStore(t *testing.T) {
	site := newEgressSite(t)
	bundle, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err != nil {
		t.Skipf("no Debian CA bundle on this host: %v", err)
	}
	etc := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(etc, "ssl/certs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(etc, "ssl/certs/ca-certificates.crt"), append(bundle, site.caPEM...), 0o644))

	const code = `
import ssl, urllib.request
def main(args):
    try:
        with urllib.request.urlopen(args["url"], timeout=20, context=ssl.create_default_context()) as r:
            return r.read().decode()
    except Exception as e:
        return type(e).__name__ + ": " + str(e)
`
	hps := hostPort(site.https.URL)
	fetch := func(r *Runner) string {
		e := egressFor(t, nil, nil, []string{hps}, []string{hps})
		res := run(t, r, code, map[string]any{"url": site.https.URL + "/verified"}, func(j *Job) { j.Egress = e })
		requireCompleted(t, res)
		return string(res.Output)
	}
	trusting := hookedRunner(t, testHooks{hostEtcDir: etc}, nil)
	assert.Equal(t, `"hello /verified"`, fetch(trusting))
	assert.Contains(t, fetch(sharedRunner(t)), "CERTIFICATE_VERIFY_FAILED", "the host's own store lacks the test CA")
}
