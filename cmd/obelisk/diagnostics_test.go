package main

import (
	"context"
	"fmt"
	"github.com/obelisk-plan/obelisk/internal/cli"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"
)

// oneLineTools is a tools file with one tool that has no annotations: an
// MCP tool is irreversible unless it says otherwise, so each call of it
// without approval is warned about.
const oneLineTools = `{"tools": [{"name": "f",
  "inputSchema": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
  "outputSchema": {"type": "object", "properties": {"y": {"type": "integer"}}}}]}`

// writeOneLinePlans writes, in dir, the tools file and a plan of n calls
// of its tool on one line, in .plan text and as minified JSON, and returns
// their paths.
func writeOneLinePlans(t testing.TB, dir string, n int) (tools, plan, js string) {
	t.Helper()
	var p, j strings.Builder
	j.WriteByte('[')
	for i := range n {
		if i > 0 {
			p.WriteString("; ")
			j.WriteByte(',')
		}
		fmt.Fprintf(&p, "f(x: %d) -> †state.r%d", i, i)
		fmt.Fprintf(&j, `{"_tool":"f","x":%d,"_outputPath":"†state.r%d"}`, i, i)
	}
	p.WriteByte('\n')
	j.WriteByte(']')
	tools = filepath.Join(dir, "tools.json")
	plan = filepath.Join(dir, fmt.Sprintf("p%d.plan", n))
	js = filepath.Join(dir, fmt.Sprintf("p%d.json", n))
	for name, text := range map[string]string{tools: oneLineTools, plan: p.String(), js: j.String()} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return tools, plan, js
}

// byteCounter counts the bytes written to it.
type byteCounter struct {
	mu sync.Mutex
	n  int64
}

func (c *byteCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.n += int64(len(p))
	c.mu.Unlock()
	return len(p), nil
}

// heapPeak samples the bytes of heap objects, live or not yet collected
// (runtime.MemStats.HeapAlloc, read without stopping the world), until
// stopped, and returns the largest.
type heapPeak struct {
	done chan struct{}
	peak chan uint64
}

func startHeapPeak() *heapPeak {
	h := &heapPeak{done: make(chan struct{}), peak: make(chan uint64)}
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-h.done:
				h.peak <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return h
}

func (h *heapPeak) stop() uint64 {
	close(h.done)
	return <-h.peak
}

// checkOneLine runs obelisk check on a plan and returns its exit status,
// the bytes it wrote and the peak of the heap while it ran.
func checkOneLine(tb testing.TB, args ...string) (status int, written int64, heap uint64) {
	tb.Helper()
	runtime.GC()
	var out byteCounter
	h := startHeapPeak()
	status = run(context.Background(), append([]string{"check"}, args...), &env{Env: cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out}})
	return status, out.n, h.stop()
}

// BenchmarkCheckOneLine: obelisk check on plans of 1k, 10k and 100k calls
// on one line, each call warned about, in .plan text and as minified JSON,
// with the text and the JSON report, of the first 100 warnings and of all
// (-all, --max-diagnostics 0). bytes/plan is what check writes,
// peak-heap-MB/plan the most the heap held while it ran (live objects and
// garbage not yet collected).
func BenchmarkCheckOneLine(b *testing.B) {
	dir := b.TempDir()
	for _, n := range []int{1000, 10000, 100000} {
		tools, plan, js := writeOneLinePlans(b, dir, n)
		for _, form := range []struct{ name, path string }{{"plan", plan}, {"json", js}} {
			for _, format := range []string{"text", "json", "text-all", "json-all"} {
				b.Run(fmt.Sprintf("%s-%dk/%s", form.name, n/1000, format), func(b *testing.B) {
					args := []string{"--tools", tools, "--format", strings.TrimSuffix(format, "-all"), form.path}
					if strings.HasSuffix(format, "-all") {
						args = append(args, "--max-diagnostics", "0")
					}
					var written int64
					var heap uint64
					for b.Loop() {
						b.StopTimer()
						runtime.GC()
						b.StartTimer()
						_, w, h := checkOneLine(b, args...)
						written, heap = w, max(heap, h)
					}
					b.ReportMetric(float64(written), "bytes/plan")
					b.ReportMetric(float64(heap)/(1<<20), "peak-heap-MB/plan")
				})
			}
		}
	}
}

// TestCheckOneLineBounded: check on a plan of 10,000 calls on one line,
// each warned about, writes the first 100 warnings and counts the rest,
// in the text and the JSON report alike, whether the plan is .plan text
// or minified JSON; what it writes does not grow with the plan, and the
// heap grows in proportion to the plan, not to the square of it.
func TestCheckOneLineBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("checks plans of 10,000 calls")
	}
	dir := t.TempDir()
	tools, _, _ := writeOneLinePlans(t, dir, 1000)
	_, plan, js := writeOneLinePlans(t, dir, 10000)
	for _, path := range []string{plan, js} {
		size, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, format := range []string{"text", "json"} {
			small := strings.Replace(path, "10000", "1000", 1)
			_, smallWritten, _ := checkOneLine(t, "--tools", tools, "--format", format, small)
			status, written, heap := checkOneLine(t, "--tools", tools, "--format", format, path)
			name := filepath.Base(path) + " " + format
			if status != exitOK {
				t.Errorf("%s: exit status %d", name, status)
			}
			// 100 warnings of a few hundred bytes each.
			if written > 100*1024 || written > smallWritten+512 {
				t.Errorf("%s: %d bytes written (%d for 1,000 calls)", name, written, smallWritten)
			}
			// Parsing and checking hold a few hundred bytes for each byte
			// of a plan this dense; quoting its line in every diagnostic
			// held gigabytes.
			if limit := uint64(400*size.Size() + 64<<20); heap > limit {
				t.Errorf("%s: the heap reached %d MB for a plan of %d kB (at most %d MB)", name, heap>>20, size.Size()>>10, limit>>20)
			}
		}
	}
	var out strings.Builder
	status := run(context.Background(), []string{"check", "--tools", tools, "--max-diagnostics", "0", plan}, &env{Env: cli.Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &out}})
	if n := strings.Count(out.String(), "[unapproved-effect]"); status != exitOK || n != 10000 {
		t.Errorf("--max-diagnostics 0: exit status %d, %d warnings printed, want 10000", status, n)
	}
}
