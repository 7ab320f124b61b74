// Command genplans writes the benchmark plans of the catalogue: for each,
// NAME.json (the bare JSON array of calls the peers read), NAME.meta.json
// (its shape: critical path, superstep bound, depth) and NAME.plan (the
// same plan as .plan text) and NAME.tools.json (the tools file declaring
// the "work" tool it calls, with as many inputs as its calls read).
//
// Usage:
//
//	go run ./bench/genplans [-out DIR] [-only REGEXP] [-list]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/obelisk-plan/obelisk/bench"
)

func main() {
	out := flag.String("out", "bench/plans", "directory to write the plans to")
	only := flag.String("only", "", "only the plans whose names match this regular expression")
	list := flag.Bool("list", false, "print the plans' names and exit")
	flag.Parse()
	re, err := regexp.Compile(*only)
	if err != nil {
		fmt.Fprintf(os.Stderr, "genplans: -only: %v\n", err)
		os.Exit(2)
	}
	if err := run(*out, re, *list); err != nil {
		fmt.Fprintf(os.Stderr, "genplans: %v\n", err)
		os.Exit(2)
	}
}

func run(dir string, only *regexp.Regexp, list bool) error {
	if !list {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	for _, e := range bench.Catalogue() {
		if !only.MatchString(e.Name) {
			continue
		}
		if list {
			fmt.Println(e.Name)
			continue
		}
		p := e.Plan()
		m := e.Meta()
		files := map[string][]byte{".json": p.JSON(), ".meta.json": m.MetaJSON(), ".plan": p.Text(), ".tools.json": p.ToolsJSON()}
		for ext, data := range files {
			if err := os.WriteFile(filepath.Join(dir, e.Name+ext), data, 0o644); err != nil {
				return err
			}
		}
		fmt.Fprintf(os.Stderr, "%-24s %-8s %7d calls %7d edges depth %6d  critical path %5d ms  superstep %5d ms\n",
			e.Name, e.Group, m.Nodes, m.Edges, m.Depth, m.CriticalPathMs, m.SuperstepMs)
	}
	return nil
}
