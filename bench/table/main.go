// Command table reads the peers' JSON lines (one run each) on standard
// input and prints one Markdown table: per plan and peer, the median of
// the runs' build time, run time, time per step, its ratio to go-minimal's,
// makespan over critical path for plans whose calls sleep, and peak RSS.
//
// Usage:
//
//	go run ./bench/table < bench/results/raw.jsonl
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"

	"github.com/obelisk-plan/obelisk/bench"
)

// run is the part of a peer's line the table reads.
type run struct {
	Peer           string  `json:"peer"`
	Plan           string  `json:"plan"`
	Nodes          int     `json:"nodes"`
	WallMs         float64 `json:"wall_ms"`
	UsPerNode      float64 `json:"us_per_node"`
	CriticalPathMs float64 `json:"critical_path_ms"`
	BuildMs        float64 `json:"build_ms"`
	DepthOK        bool    `json:"depth_ok"`
	MaxRSSMB       float64 `json:"max_rss_mb"`
}

type key struct{ plan, peer string }

func main() {
	if err := table(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "table: %v\n", err)
		os.Exit(2)
	}
}

func table(in io.Reader, out io.Writer) error {
	runs := map[key][]run{}
	var order []key
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 || sc.Bytes()[0] != '{' {
			continue
		}
		var r run
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return fmt.Errorf("%q: %w", sc.Text(), err)
		}
		k := key{r.Plan, r.Peer}
		if _, seen := runs[k]; !seen {
			order = append(order, k)
		}
		runs[k] = append(runs[k], r)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	rank := map[string]int{}
	for i, e := range bench.Catalogue() {
		rank[e.Name] = i
	}
	peerRank := map[string]int{"go-minimal": 0, "obelisk": 1, "obelisk-novalidate": 2, "langgraph-js": 3}
	slices.SortStableFunc(order, func(a, b key) int {
		if a.plan != b.plan {
			return rank[a.plan] - rank[b.plan]
		}
		return peerRank[a.peer] - peerRank[b.peer]
	})
	fmt.Fprintln(out, "| plan | steps | peer | runs | build ms | run ms | µs/step | × go-minimal | makespan / critical path | max RSS MB |")
	fmt.Fprintln(out, "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, k := range order {
		rs := runs[k]
		ok := 0
		for _, r := range rs {
			if r.DepthOK {
				ok++
			}
		}
		wall := median(rs, func(r run) float64 { return r.WallMs })
		us := median(rs, func(r run) float64 { return r.UsPerNode })
		ratio, cp := "", ""
		if base, found := runs[key{k.plan, "go-minimal"}]; found && k.peer != "go-minimal" {
			ratio = num(us/median(base, func(r run) float64 { return r.UsPerNode })) + "×"
		}
		if c := rs[0].CriticalPathMs; c > 0 {
			cp = num(wall/c) + "×"
		}
		runsCell := strconv.Itoa(len(rs))
		if ok != len(rs) {
			runsCell = fmt.Sprintf("%d (%d wrong)", len(rs), len(rs)-ok)
		}
		fmt.Fprintf(out, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", k.plan, rs[0].Nodes, k.peer, runsCell,
			num(median(rs, func(r run) float64 { return r.BuildMs })), num(wall), num(us), ratio, cp,
			num(median(rs, func(r run) float64 { return r.MaxRSSMB })))
	}
	return nil
}

// median of a field over the runs.
func median(rs []run, f func(run) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// num prints three significant digits, without an exponent.
func num(x float64) string {
	switch {
	case x >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case x >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case x >= 1:
		return strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strconv.FormatFloat(x, 'f', 3, 64)
}
