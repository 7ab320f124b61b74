package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/obelisk-plan/obelisk/internal/cli"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/obelisk-plan/obelisk/internal/testsize"
)

// memoryServer returns the path of the reference memory server from npm
// (a knowledge graph in one file, which each write reads, changes and
// writes back). It skips the test when node or the packages are missing.
func memoryServer(t *testing.T) string {
	t.Helper()
	npm := npmPackages(t)
	if _, err := exec.LookPath("env"); err != nil {
		t.Skip("env is not installed: the test passes the memory server its file through env (coreutils)")
	}
	return filepath.Join(npm, "node_modules/@modelcontextprotocol/server-memory/dist/index.js")
}

// writesPlan makes many independent writes to the memory server: an
// entity for each name, and an observation of each name on the entity
// log, and then reads the graph back.
const writesPlan = `input {
  names: [string]
}

log: memory.create_entities(entities: [{"name": "log", "entityType": "log", "observations": []}]) -> $state.log
made: for each n in $input.names max 100: memory.create_entities(entities: [{"name": $n, "entityType": "thing", "observations": []}]) -> $state.made
noted: for each n in $input.names max 100: memory.add_observations(observations: [{"entityName": "log", "contents": [$n]}]) -> $state.noted
  when has($state.log)
graph: memory.read_graph() -> $state.graph
  when has($state.made) && has($state.noted)

output $state.graph
`

// graphEntity is an entity of the memory server's knowledge graph.
type graphEntity struct {
	Name         string   `json:"name"`
	Observations []string `json:"observations"`
}

// lostWrites says which writes of writesPlan a graph lacks.
func lostWrites(names []string, entities []graphEntity) []string {
	var lost []string
	byName := map[string]graphEntity{}
	for _, e := range entities {
		byName[e.Name] = e
	}
	if _, ok := byName["log"]; !ok {
		lost = append(lost, "entity log")
	}
	for _, n := range names {
		if _, ok := byName[n]; !ok {
			lost = append(lost, "entity "+n)
		}
		if !slices.Contains(byName["log"].Observations, n) {
			lost = append(lost, "observation "+n)
		}
	}
	return lost
}

// savedGraph reads the entities of the memory server's file; a file
// never written is an empty graph.
func savedGraph(path string) ([]graphEntity, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []graphEntity
	for line := range bytes.Lines(b) {
		var item struct {
			Type string `json:"type"`
			graphEntity
		}
		if err := json.Unmarshal(line, &item); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if item.Type == "entity" {
			out = append(out, item.graphEntity)
		}
	}
	return out, nil
}

// writesTrial is a run of writesPlan against a fresh graph.
type writesTrial struct {
	// lost are the writes the server's file lacks after the run.
	lost           []string
	code           int
	stdout, stderr string
	err            error
}

// TestMCPWritesSerialized: independent writes to an MCP server that reads
// its state, changes it and writes it back (the memory server from npm)
// wait for each other by default, so that none is lost, in every one of
// 8 runs (20 in the full run, internal/testsize): the graph the plan reads back, and the file the server keeps,
// have every entity and every observation. With --mcp-parallel memory=8
// the writes go at once, and a run loses some: the check can see a lost
// write.
func TestMCPWritesSerialized(t *testing.T) {
	index := memoryServer(t)
	var names []string
	for i := range 16 {
		names = append(names, fmt.Sprintf("n%02d", i))
	}
	input, _ := json.Marshal(map[string]any{"names": names})
	dir := writeFiles(t, map[string]string{"w.plan": writesPlan, "w.json": string(input)})

	// batch runs the plan four times at once, each run with a server, a
	// graph and a journal of its own: most of a run is the server's
	// start.
	batch := func(flags ...string) []writesTrial {
		out := make([]writesTrial, 4)
		var wg sync.WaitGroup
		for i := range out {
			tmp := t.TempDir()
			file := filepath.Join(tmp, "memory.jsonl")
			args := []string{"run", "--state-dir", filepath.Join(tmp, "state"), "--input", "@" + filepath.Join(dir, "w.json"),
				"--mcp", fmt.Sprintf("memory=env 'MEMORY_FILE_PATH=%s' node '%s'", file, index)}
			args = append(append(args, flags...), filepath.Join(dir, "w.plan"))
			wg.Go(func() {
				var stdout, stderr bytes.Buffer
				tr := &out[i]
				tr.code = run(context.Background(), args, &env{Env: cli.Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr}})
				tr.stdout, tr.stderr = stdout.String(), stderr.String()
				saved, err := savedGraph(file)
				tr.lost, tr.err = lostWrites(names, saved), err
			})
		}
		wg.Wait()
		return out
	}

	for b := range testsize.Pick(t, 2, 5) {
		for i, tr := range batch() {
			trial := 4*b + i
			if tr.err != nil {
				t.Fatalf("trial %d: %v", trial, tr.err)
			}
			if len(tr.lost) > 0 {
				t.Fatalf("trial %d: the server's file lost %s (exit %d)\n%s", trial, strings.Join(tr.lost, ", "), tr.code, tr.stderr)
			}
			if tr.code != exitOK {
				t.Fatalf("trial %d: exit %d\n%s\n%s", trial, tr.code, tr.stdout, tr.stderr)
			}
			var graph struct{ Entities []graphEntity }
			if err := json.Unmarshal([]byte(tr.stdout), &graph); err != nil {
				t.Fatalf("trial %d: the output is not a graph: %v\n%s", trial, err, tr.stdout)
			}
			if lost := lostWrites(names, graph.Entities); len(lost) > 0 || len(graph.Entities) != len(names)+1 {
				t.Fatalf("trial %d: the graph read back lost %s:\n%s", trial, strings.Join(lost, ", "), tr.stdout)
			}
		}
	}

	for b := range 5 {
		for i, tr := range batch("--mcp-parallel", "memory=8") {
			if tr.err != nil {
				t.Fatalf("trial %d with --mcp-parallel memory=8: %v", 4*b+i, tr.err)
			}
			if len(tr.lost) > 0 {
				t.Logf("with --mcp-parallel memory=8, trial %d lost %d of %d writes (exit %d)", 4*b+i, len(tr.lost), 2*len(names)+1, tr.code)
				return
			}
		}
	}
	t.Errorf("with --mcp-parallel memory=8, no write was lost in 20 runs: the test cannot see a lost write")
}
