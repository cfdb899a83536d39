package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progress draws a progress bar on a terminal, redrawn at most every
// progressEvery; on anything else (a file, a pipe, CI logs) it writes
// nothing, so that logs hold no carriage-return noise.
type progress struct {
	w         io.Writer // nil: not a terminal
	total     int64
	start, at time.Time
	finished  bool
	n         int64
}

const (
	progressEvery = 100 * time.Millisecond
	barWidth      = 30
)

func newProgress(w io.Writer, total int64) *progress {
	p := &progress{total: total, start: time.Now()}
	if isTerminal(w) {
		p.w = w
	}
	return p
}

// isTerminal reports whether w is a character device: a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (p *progress) set(n int64) {
	p.n = n
	if p.w == nil || time.Since(p.at) < progressEvery {
		return
	}
	p.at = time.Now()
	p.draw()
}

func (p *progress) draw() {
	fmt.Fprintf(p.w, "\r%s", progressLine(p.n, p.total, time.Since(p.start)))
}

// done draws the bar complete and ends its line.
func (p *progress) done() {
	if p.w == nil || p.finished {
		return
	}
	p.finished = true
	p.draw()
	fmt.Fprintln(p.w)
}

// progressLine renders "[=====>    ]  45%  12.3 MiB / 27.0 MiB  3.1 MiB/s".
func progressLine(n, total int64, elapsed time.Duration) string {
	frac := 1.0
	if total > 0 {
		frac = float64(n) / float64(total)
	}
	full := int(frac * barWidth)
	bar := strings.Repeat("=", full)
	if full < barWidth {
		bar += ">" + strings.Repeat(" ", barWidth-full-1)
	}
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(n) / s
	}
	return fmt.Sprintf("[%s] %3.0f%%  %s / %s  %s/s", bar, frac*100, mib(float64(n)), mib(float64(total)), mib(rate))
}

func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }
