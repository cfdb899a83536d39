package sandbox

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
)

// egressBenchPy downloads args["size"] bytes from args["url"] and times
// args["small"] small requests, with urllib as a skill would: through the
// proxy inside a sandbox, directly on the host.
const egressBenchPy = `
import json, sys, time, urllib.request
def main(args):
    t = time.perf_counter()
    n = 0
    with urllib.request.urlopen(args["url"] + "/big", timeout=60) as r:
        while True:
            b = r.read(1 << 20)
            if not b:
                break
            n += len(b)
    big = time.perf_counter() - t
    lat = []
    for _ in range(args["small"]):
        t = time.perf_counter()
        urllib.request.urlopen(args["url"] + "/small", timeout=60).read()
        lat.append(time.perf_counter() - t)
    lat.sort()
    return {"bytes": n, "mb_s": n / big / 1e6, "small_p50_ms": lat[len(lat) // 2] * 1e3}
if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
`

type egressBenchResult struct {
	Bytes      int64   `json:"bytes"`
	MBs        float64 `json:"mb_s"`
	SmallP50ms float64 `json:"small_p50_ms"`
}

// BenchmarkEgressDownload compares a 50 MB download and small requests
// through the sandbox's proxy with the same script on the host, in the
// same invocation:
//
//	go test -run '^$' -bench EgressDownload -benchtime 3x ./sandbox/
func BenchmarkEgressDownload(b *testing.B) {
	const size = 50 << 20
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			_, _ = io.CopyN(w, zeroReader{}, size)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer site.Close()
	hp := hostPort(site.URL)
	r := benchRunner(b, 1, IDMapAuto)
	args, _ := json.Marshal(map[string]any{"url": site.URL, "small": 20})
	var in, out egressBenchResult
	for range b.N {
		e := egressFor(b, nil, nil, []string{hp}, []string{hp})
		res := run(b, r, egressBenchPy, json.RawMessage(args), func(j *Job) { j.Egress = e })
		requireCompleted(b, res)
		var got egressBenchResult
		if err := json.Unmarshal(res.Output, &got); err != nil || got.Bytes != size {
			b.Fatalf("sandboxed download: %v %+v", err, got)
		}
		in.MBs += got.MBs / float64(b.N)
		in.SmallP50ms += got.SmallP50ms / float64(b.N)
		host, err := exec.Command(defaultPython, "-I", "-c", egressBenchPy, string(args)).Output()
		if err != nil {
			b.Fatalf("host python: %v", err)
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(string(host))), &got); err != nil {
			b.Fatalf("host python: %v", err)
		}
		out.MBs += got.MBs / float64(b.N)
		out.SmallP50ms += got.SmallP50ms / float64(b.N)
	}
	b.ReportMetric(in.MBs, "proxied-MB/s")
	b.ReportMetric(out.MBs, "direct-MB/s")
	b.ReportMetric(in.MBs/out.MBs, "throughput-ratio")
	b.ReportMetric(in.SmallP50ms-out.SmallP50ms, "added-small-ms")
}
