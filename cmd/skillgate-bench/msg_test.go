package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/transport"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{"100", 100, true},
		{"0", 0, true},
		{"4k", 4096, true},
		{"4K", 4096, true},
		{"4KB", 4096, true},
		{"64KiB", 64 << 10, true},
		{" 64 kib ", 64 << 10, true},
		{"1m", 1 << 20, true},
		{"2MiB", 2 << 20, true},
		{"", 0, false},
		{"k", 0, false},
		{"-1", 0, false},
		{"1.5k", 0, false},
		{"4g", 0, false},
		{"100000m", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseSize(tt.in)
			if !tt.ok {
				require.ErrorIs(t, err, errBadSize)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestFormatSize(t *testing.T) {
	assert.Equal(t, "100 B", formatSize(100))
	assert.Equal(t, "4 KiB", formatSize(4096))
	assert.Equal(t, "64 KiB", formatSize(64<<10))
	assert.Equal(t, "1 MiB", formatSize(1<<20))
	assert.Equal(t, "1500 B", formatSize(1500))
}

func TestSlotRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		seq  uint64
		slot uint32
	}{{1, 0}, {123456789, 31}, {1<<64 - 1, 1<<32 - 1}} {
		id := appendID(nil, tc.seq, tc.slot)
		got, ok := parseSlot(id)
		require.True(t, ok, "%s", id)
		assert.Equal(t, tc.slot, got)
	}
}

func TestParseSlotBad(t *testing.T) {
	for _, id := range []string{"", "pt-", "pt-1", "init-1", "gw-1-2", "pt-1-", "pt-1-x", "pt-1-99999999999", "pt--1"} {
		_, ok := parseSlot([]byte(id))
		assert.False(t, ok, "%q", id)
	}
}

func FuzzParseSlot(f *testing.F) {
	f.Add("pt-1-0")
	f.Add("pt-99-31")
	f.Add("pt--")
	f.Fuzz(func(t *testing.T, id string) {
		slot, ok := parseSlot([]byte(id))
		if ok {
			// The slot is the number after the last '-' of a "pt-" id.
			assert.True(t, strings.HasPrefix(id, idPrefix))
			n, err := strconv.ParseUint(id[strings.LastIndexByte(id, '-')+1:], 10, 32)
			require.NoError(t, err)
			assert.Equal(t, uint64(slot), n)
		}
	})
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"100", "4k", "64KiB", "1m", "", "-3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseSize(s)
		if err == nil {
			assert.GreaterOrEqual(t, n, 0)
			assert.LessOrEqual(t, n, 64<<20)
		}
	})
}

func TestTemplateFrames(t *testing.T) {
	tests := []struct {
		method, params string
		size           int
	}{
		{"_Keepalive", `{}`, 0},
		{"_Keepalive", `{}`, 100},
		{"_Keepalive", `{}`, 4096},
		{"Echo", `{"amount":123}`, 65536},
		{"list_skills", `{"limit":1}`, 0},
		{"we\"ird", ` { "a" : [1,2] } `, 300},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			tpl, err := newTemplate(tt.method, []byte(tt.params), tt.size)
			require.NoError(t, err)
			frame := tpl.appendFrame(nil, 42, 7)
			fr := transport.NewReader(bytesReader(frame), 1<<20)
			body, err := fr.ReadFrame()
			require.NoError(t, err)
			var m transport.Message
			require.NoError(t, transport.Decode(body, &m))
			assert.Equal(t, transport.KindRequest, m.Kind)
			assert.Equal(t, tt.method, string(m.Method))
			assert.Equal(t, "pt-42-7", string(m.ID))
			if tt.size > 0 {
				assert.InDelta(t, tt.size, len(body), 16, "body %d bytes", len(body))
			}
		})
	}
}

func TestTemplateBadParams(t *testing.T) {
	for _, p := range []string{``, `[]`, `{`, `{"a":}`, `"x"`, `{} {}`} {
		_, err := newTemplate("_Keepalive", []byte(p), 0)
		require.ErrorIs(t, err, errBadParams, "%q", p)
	}
}

func BenchmarkAppendFrame(b *testing.B) {
	b.ReportAllocs()
	tpl, err := newTemplate("_Keepalive", []byte(`{}`), 100)
	require.NoError(b, err)
	buf := make([]byte, 0, 4096)
	var seq uint64
	for b.Loop() {
		seq++
		buf = tpl.appendFrame(buf[:0], seq, uint32(seq%32))
	}
}
