// Command gominimal is the floor of the benchmark comparison: the least a
// Go program can do to run a generated plan. It decodes the JSON array of
// calls with encoding/json, maps each †state. reference to the call that
// writes the slot, and runs the calls with bench.RunMinimal: one
// goroutine per call that waits for its predecessors' done channels, calls
// the "work" tool and closes its own. No checking, no state store, no
// events, no retries.
//
// It prints one JSON line in the peers' format (peer "go-minimal"):
// build_ms is decoding and resolving, wall_ms starting and awaiting every
// call.
//
// Usage:
//
//	go run ./bench/peers/gominimal [-warmup N] PLAN.json
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/obelisk-plan/obelisk/bench"
)

func main() {
	warmup := flag.Int("warmup", 0, "runs before the measured one, in the same process")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: gominimal [-warmup N] PLAN.json")
		os.Exit(2)
	}
	if err := measure(flag.Arg(0), *warmup); err != nil {
		fmt.Fprintf(os.Stderr, "gominimal: %v\n", err)
		os.Exit(1)
	}
}

func measure(path string, warmup int) error {
	base := strings.TrimSuffix(path, ".json")
	var meta bench.Meta
	if b, err := os.ReadFile(base + ".meta.json"); err != nil {
		return err
	} else if err := json.Unmarshal(b, &meta); err != nil {
		return err
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var build, wall time.Duration
	ok := false
	for range warmup + 1 {
		t0 := time.Now()
		nodes, err := load(src)
		if err != nil {
			return err
		}
		t1 := time.Now()
		results, err := bench.RunMinimal(context.Background(), nodes)
		wall, build = time.Since(t1), t1.Sub(t0)
		if err != nil {
			return err
		}
		depth := 0
		for _, r := range results {
			depth = max(depth, r)
		}
		ok = depth == meta.Depth
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	b, _ := json.Marshal(map[string]any{
		"peer": "go-minimal", "plan": filepath.Base(base), "nodes": meta.Nodes,
		"wall_ms": ms(wall), "us_per_node": float64(wall.Nanoseconds()) / 1e3 / float64(max(1, meta.Nodes)),
		"critical_path_ms": meta.CriticalPathMs, "build_ms": ms(build), "depth_ok": ok, "warmup": warmup,
		"max_rss_mb": float64(ru.Maxrss) / 1024,
	})
	fmt.Println(string(b))
	return nil
}

// load decodes the calls and resolves their references to predecessors.
func load(src []byte) ([]bench.MinimalCall, error) {
	var calls []map[string]any
	if err := json.Unmarshal(src, &calls); err != nil {
		return nil, err
	}
	writer := make(map[string]int, len(calls))
	for i, c := range calls {
		out, _ := c["_outputPath"].(string)
		if _, dup := writer[out]; dup || !strings.HasPrefix(out, "†state.") {
			return nil, fmt.Errorf("call %d: bad or repeated _outputPath %q", i, out)
		}
		writer[out] = i
	}
	nodes := make([]bench.MinimalCall, len(calls))
	for i, c := range calls {
		if ms, ok := c["ms"].(float64); ok {
			nodes[i].Ms = time.Duration(ms) * time.Millisecond
		}
		for k, v := range c {
			if s, isStr := v.(string); isStr && k != "_outputPath" && strings.HasPrefix(s, "†state.") {
				j, found := writer[s]
				if !found {
					return nil, fmt.Errorf("call %d reads %s, which no call writes", i, s)
				}
				nodes[i].Preds = append(nodes[i].Preds, j)
			}
		}
	}
	return nodes, nil
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
