package auth

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

func BenchmarkAuthenticateToken(b *testing.B) {
	good, err := NewToken()
	if err != nil {
		b.Fatal(err)
	}
	bad, err := NewToken()
	if err != nil {
		b.Fatal(err)
	}
	file := strings.Replace(expand(goodFile), HashToken(tokAgent), HashToken(good), 1)
	s, err := Load(tempFile(b, file), Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, token string }{{"hit", good}, {"miss", bad}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = s.AuthenticateToken(bc.token)
			}
		})
	}
}

func BenchmarkAllow(b *testing.B) {
	b.Run("one identity", func(b *testing.B) {
		l := NewLimiter(nil)
		id := limited("a", Limits{RequestsPerSecond: 1e9, Burst: 1e6})
		b.ReportAllocs()
		for b.Loop() {
			l.Allow(id)
		}
	})
	b.Run("parallel, identity per goroutine", func(b *testing.B) {
		l := NewLimiter(nil)
		var n atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			id := limited("id-"+strconv.FormatInt(n.Add(1), 10), Limits{RequestsPerSecond: 1e9, Burst: 1e6})
			for pb.Next() {
				l.Allow(id)
			}
		})
	})
}

func BenchmarkTryAcquireRun(b *testing.B) {
	l := NewLimiter(nil)
	id := limited("a", Limits{ConcurrentRuns: 4})
	b.ReportAllocs()
	for b.Loop() {
		rel, _ := l.TryAcquireRun(id)
		rel()
	}
}

func BenchmarkParse(b *testing.B) {
	data := []byte(expand(goodFile))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data, ParseOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
