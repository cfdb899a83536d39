package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/skillgate/skillgate/transport"
)

// idPrefix starts the ids of load requests: "pt-<seq>-<slot>". The sequence
// keeps ids unique on a connection (the gateway rejects a reused id); the
// slot says which in-flight window entry the answer frees, so answers may
// come back in any order.
const idPrefix = "pt-"

// parseSize parses a message size: a byte count with an optional k/K/KB/KiB
// (1024) or m/M/MB/MiB (1 << 20) suffix.
func parseSize(s string) (int, error) {
	t := strings.TrimSpace(s)
	mult := 1
	lower := strings.ToLower(t)
	for _, suf := range []struct {
		s string
		m int
	}{{"kib", 1 << 10}, {"kb", 1 << 10}, {"k", 1 << 10}, {"mib", 1 << 20}, {"mb", 1 << 20}, {"m", 1 << 20}} {
		if strings.HasSuffix(lower, suf.s) {
			t, mult = strings.TrimSpace(t[:len(t)-len(suf.s)]), suf.m
			break
		}
	}
	n, err := strconv.Atoi(t)
	if err != nil || n < 0 || n > 64<<20/mult {
		return 0, fmt.Errorf("%w: %q", errBadSize, s)
	}
	return n * mult, nil
}

// formatSize is the short form of a size used in tables.
func formatSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " B"
}

// appendID appends the id content for request seq in window slot.
func appendID(dst []byte, seq uint64, slot uint32) []byte {
	dst = append(dst, idPrefix...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, '-')
	return strconv.AppendUint(dst, uint64(slot), 10)
}

// parseSlot returns the window slot of a load request id.
func parseSlot(id []byte) (uint32, bool) {
	if !bytes.HasPrefix(id, []byte(idPrefix)) {
		return 0, false
	}
	i := bytes.LastIndexByte(id, '-')
	if i <= len(idPrefix) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(id[i+1:]), 10, 32)
	if err != nil {
		return 0, false
	}
	return uint32(n), true
}

// template is a request with everything but the id fixed, split around the
// id so that a frame costs two appends.
type template struct {
	head, tail []byte
}

// newTemplate builds the request for method with params (a JSON object),
// padded with a "pad" member so that a body is about size bytes (0: no
// padding).
func newTemplate(method string, params []byte, size int) (template, error) {
	if err := transport.EachMember(params, func(_, _ []byte) error { return nil }); err != nil {
		return template{}, fmt.Errorf("%w: %v", errBadParams, err)
	}
	head := transport.AppendRequest(nil, "\x00", method, params)
	i := bytes.Index(head, []byte(`"\u0000"`))
	t := template{head: head[:i+1], tail: append([]byte{}, head[i+len(`"\u0000"`)-1:]...)}
	if pad := size - t.bodyLen(1, 1); size > 0 && pad > 0 {
		return newTemplate(method, padParams(params, pad), 0)
	}
	return t, nil
}

// bodyLen is the body length of a request whose id has the given widths.
func (t template) bodyLen(seqDigits, slotDigits int) int {
	return len(t.head) + len(t.tail) + len(idPrefix) + seqDigits + 1 + slotDigits
}

// padParams inserts a "pad" member of about n bytes into the object params.
func padParams(params []byte, n int) []byte {
	const member = `"pad":"",`
	fill := max(n-len(member), 0)
	rest := bytes.TrimSpace(params)[1:]
	out := append([]byte(`{"pad":"`), bytes.Repeat([]byte{'x'}, fill)...)
	if bytes.TrimSpace(rest)[0] == '}' {
		return append(out, `"}`...)
	}
	out = append(out, `",`...)
	return append(out, rest...)
}

// appendFrame appends request seq in slot as a frame.
func (t template) appendFrame(dst []byte, seq uint64, slot uint32) []byte {
	start := len(dst)
	dst = transport.BeginFrame(dst)
	dst = append(dst, t.head...)
	dst = appendID(dst, seq, slot)
	dst = append(dst, t.tail...)
	dst, _ = transport.EndFrame(dst, start, transport.MaxFrameBody)
	return dst
}
