// Command obelisk is the Obelisk peer of the benchmark comparison: it
// reads a generated plan in its JSON form (the bare array of calls the
// other peers read), parses, checks and compiles it, runs it with the
// "work" tool, and prints one JSON line in the peers' format:
//
//	{"peer":"obelisk","plan":…,"nodes":…,"wall_ms":…,"us_per_node":…,"critical_path_ms":…,"build_ms":…,"depth_ok":…,…}
//
// build_ms is parse + check + compile; wall_ms is the run (vm.Run): state,
// events to an observer, argument and result checks, and with -validate
// the tool registry's JSON Schema validation of every call. The plan's
// NAME.meta.json and NAME.tools.json are read from beside it.
//
// Usage:
//
//	go run ./bench/peers/obelisk [-parallel N] [-validate=false] [-warmup N] PLAN.json
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
	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/vm"
)

// line is the peers' one-line report.
type line struct {
	Peer           string  `json:"peer"`
	Plan           string  `json:"plan"`
	Nodes          int     `json:"nodes"`
	WallMs         float64 `json:"wall_ms"`
	UsPerNode      float64 `json:"us_per_node"`
	CriticalPathMs int     `json:"critical_path_ms"`
	BuildMs        float64 `json:"build_ms"`
	DepthOK        bool    `json:"depth_ok"`
	Parallel       int     `json:"parallel"`
	Validate       bool    `json:"validate"`
	Events         int     `json:"events"`
	Warmup         int     `json:"warmup"`
	MaxRSSMB       float64 `json:"max_rss_mb"`
}

func main() {
	parallel := flag.Int("parallel", 256, "the most steps running at once (vm.Options.MaxParallel)")
	validate := flag.Bool("validate", true, "call the tool through a toolkit.Registry, which validates arguments and results against the tool's JSON Schemas")
	warmup := flag.Int("warmup", 0, "runs before the measured one, in the same process")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: obelisk-peer [-parallel N] [-validate=false] [-warmup N] PLAN.json")
		os.Exit(2)
	}
	out, err := run(flag.Arg(0), *parallel, *validate, *warmup)
	if err != nil {
		fmt.Fprintf(os.Stderr, "obelisk peer: %v\n", err)
		os.Exit(1)
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}

func run(path string, parallel int, validate bool, warmup int) (*line, error) {
	base := strings.TrimSuffix(path, ".json")
	var meta bench.Meta
	if b, err := os.ReadFile(base + ".meta.json"); err != nil {
		return nil, err
	} else if err := json.Unmarshal(b, &meta); err != nil {
		return nil, fmt.Errorf("%s.meta.json: %w", base, err)
	}
	toolsJSON, err := os.ReadFile(base + ".tools.json")
	if err != nil {
		return nil, err
	}
	decls, diags := lang.ParseTools(base+".tools.json", toolsJSON)
	if diags.HasErrors() {
		return nil, fmt.Errorf("%s", diags)
	}
	var caller vm.Caller = direct{}
	if validate {
		reg, err := registry(toolsJSON)
		if err != nil {
			return nil, err
		}
		caller = reg
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := &line{Peer: "obelisk", Plan: filepath.Base(base), Nodes: meta.Nodes, CriticalPathMs: meta.CriticalPathMs,
		Parallel: parallel, Validate: validate, Warmup: warmup}
	if !validate {
		out.Peer = "obelisk-novalidate"
	}
	for round := 0; round <= warmup; round++ {
		t0 := time.Now()
		prog, err := build(path, src, decls)
		if err != nil {
			return nil, err
		}
		built := time.Since(t0)
		events := 0
		opts := vm.Options{Tools: caller, MaxParallel: parallel, Observer: func(vm.Event) { events++ }}
		t1 := time.Now()
		res, err := vm.Run(context.Background(), prog, map[string]any{"seed": int64(0)}, opts)
		wall := time.Since(t1)
		if err != nil {
			return nil, err
		}
		if res.Status != vm.RunCompleted {
			return nil, fmt.Errorf("the run ended %s: %v", res.Status, res.Err)
		}
		depth := int64(0)
		for _, v := range res.State {
			if n, ok := v.(int64); ok {
				depth = max(depth, n)
			}
		}
		out.BuildMs = ms(built)
		out.WallMs = ms(wall)
		out.UsPerNode = float64(wall.Nanoseconds()) / 1e3 / float64(max(1, meta.Nodes))
		out.DepthOK = depth == int64(meta.Depth) && len(res.State) == meta.Nodes
		out.Events = events
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		out.MaxRSSMB = float64(ru.Maxrss) / 1024 // KiB on Linux
	}
	return out, nil
}

// build parses, checks and compiles the plan. A bare array of calls has
// no input block; the input the peers give, {"seed": 0}, is declared here.
func build(name string, src []byte, tools []*lang.ToolDecl) (*compiler.Program, error) {
	f, diags := lang.ParseJSON(name, src)
	if diags.HasErrors() {
		return nil, firstErrors(diags)
	}
	input, _ := lang.Parse("input", []byte("input {\n  seed: int\n}\n"))
	f.Items = append(f.Items, input.Items...)
	c, err := planfile.Build(f, nil, compiler.Config{Tools: tools}, compiler.Options{})
	if c.Diagnostics.HasErrors() {
		return nil, firstErrors(c.Diagnostics)
	}
	return c.Program, err
}

// firstErrors reports the first few diagnostics.
func firstErrors(diags lang.Diagnostics) error {
	if len(diags) > 3 {
		return fmt.Errorf("%s\n… and %d more", diags[:3], len(diags)-3)
	}
	return fmt.Errorf("%s", diags)
}

// registry registers the work tool with the schemas of the tools file.
func registry(toolsJSON []byte) (*toolkit.Registry, error) {
	var file struct {
		Tools []toolkit.Definition `json:"tools"`
	}
	if err := json.Unmarshal(toolsJSON, &file); err != nil {
		return nil, err
	}
	reg := toolkit.NewRegistry()
	for _, d := range file.Tools {
		if err := reg.Register(d, toolkit.ToolFunc(bench.Work)); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// direct calls the work tool without a registry.
type direct struct{}

func (direct) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	return bench.Work(ctx, args)
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
