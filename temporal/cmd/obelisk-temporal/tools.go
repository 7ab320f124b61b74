package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/stdlib"
	"github.com/obelisk-plan/obelisk/temporal/obtemporal"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/toolkit/cmdtool"
	"github.com/obelisk-plan/obelisk/toolkit/httptool"
	"github.com/obelisk-plan/obelisk/toolkit/mcp"
	"github.com/obelisk-plan/obelisk/toolkit/permission"
)

// toolFlags are the worker's tools and limits: the flags of obelisk run
// that say which tools a plan may call, what they may touch, and how long
// and how much.
type toolFlags struct {
	tools, mcp, mcpParallel stringList
	grants                  permission.Flags
	allowCommands           bool
	files, mocks            string
	strict                  bool
	limits                  compiler.Limits
	maxParallel             int
	stepTimeout, runTimeout time.Duration
	maxOutput               int
	heartbeat               time.Duration
}

func (tf *toolFlags) register(fs *flag.FlagSet) {
	fs.Var(&tf.tools, "tools", "a tools file (MCP tools/list or OpenAI functions JSON, where a tool may have an http or command block saying how it is called) whose tools the plans may call; may be repeated")
	fs.Var(&tf.mcp, "mcp", "an MCP server whose tools the plans may call: 'NAME=COMMAND [ARGS...]', started on stdio; may be repeated")
	fs.Var(&tf.mcpParallel, "mcp-parallel", "NAME=N: at most N calls at once to the MCP server NAME, reads and writes (default: reads at once, and one write at a time: a call of a tool whose annotations do not say readOnlyHint waits for the server's other writes); may be repeated")
	tf.grants.Register(fs)
	fs.BoolVar(&tf.allowCommands, "allow-commands", false, "let command tools (a command block in a tools file) run their programs; they are off without it")
	fs.StringVar(&tf.files, "files", "", "a directory the built-in file.read and file.write tools may use (they are off without it)")
	fs.StringVar(&tf.mocks, "mocks", "", "a mocks file answering tool calls before the other tools")
	fs.BoolVar(&tf.strict, "strict", false, "report an irreversible call without an approval gate as an error, not a warning")
	fs.IntVar(&tf.limits.MaxSteps, "max-steps", 100000, "the most steps a plan may have, its sub-plans' included")
	fs.IntVar(&tf.limits.MaxForEach, "max-fanout", 1000, "the most elements a for each may run")
	fs.Uint64Var(&tf.limits.MaxCost, "max-cost", 1000000, "the most a CEL expression may cost to evaluate")
	fs.IntVar(&tf.maxParallel, "max-parallel", 8, "how many calls of a run may run at once")
	fs.DurationVar(&tf.stepTimeout, "step-timeout", 60*time.Second, "the longest a step's tool call (each attempt) may take; a step's own timeout may only lower it")
	fs.DurationVar(&tf.runTimeout, "run-timeout", 0, "the longest a run may take, waits for approvals included (0: no bound)")
	fs.IntVar(&tf.maxOutput, "max-output", obtemporal.MaxResultBytes, fmt.Sprintf("the largest result a step may have, in bytes of JSON (at most %d: Temporal keeps each result in the run's history)", obtemporal.MaxResultBytes))
	fs.DurationVar(&tf.heartbeat, "heartbeat", 10*time.Second, "how soon a call whose worker was lost is started again on another worker")
}

// config builds the worker's tools: the built-in tools, the MCP servers',
// the tools files' and the mocks. It returns the function that stops the
// MCP servers.
func (tf *toolFlags) config(ctx context.Context) (obtemporal.Config, func(), error) {
	var servers []*mcp.Server
	stop := func() {
		for _, s := range servers {
			s.Close()
		}
	}
	fail := func(err error) (obtemporal.Config, func(), error) {
		stop()
		return obtemporal.Config{}, nil, err
	}
	if tf.maxOutput > obtemporal.MaxResultBytes || tf.maxOutput <= 0 {
		return fail(fmt.Errorf("--max-output %d: give 1 to %d bytes; Temporal refuses larger payloads, so keep large values outside the run", tf.maxOutput, obtemporal.MaxResultBytes))
	}
	net, env := tf.grants.Policies()
	reg := toolkit.NewRegistry()
	if err := stdlib.Register(reg, stdlib.Options{FilesRoot: tf.files, Net: net}); err != nil {
		return fail(err)
	}
	builtinDecls, _ := lang.ParseTools("<built-in tools>", builtinToolsJSON())
	builtin := map[string]bool{}
	for _, d := range builtinDecls {
		builtin[d.Name.Name] = true
	}
	parallel := map[string]int{}
	for _, v := range tf.mcpParallel {
		name, n, ok := strings.Cut(v, "=")
		k, err := strconv.Atoi(n)
		if !ok || name == "" || err != nil || k < 1 {
			return fail(fmt.Errorf("--mcp-parallel %q: give NAME=N, with N a whole number of calls, 1 or more", v))
		}
		parallel[name] = k
	}
	for _, spec := range tf.mcp {
		name, argv, err := mcp.ParseSpec(spec)
		if err != nil {
			return fail(fmt.Errorf("--mcp %v", err))
		}
		s, err := mcp.Start(ctx, name, argv, mcp.Options{MaxParallel: parallel[name], MaxWrites: parallel[name]})
		if err != nil {
			return fail(err)
		}
		servers = append(servers, s)
	}
	var decls []*lang.ToolDecl
	var defs []toolkit.Definition
	for _, b := range mcp.Bind(servers, func(name string) bool { return builtin[name] }) {
		if !lang.IsToolName(b.Definition.Name) {
			continue
		}
		if err := reg.Register(b.Definition, b); err != nil {
			return fail(err)
		}
		defs = append(defs, b.Definition)
	}
	if len(defs) > 0 {
		_, d, diags := planfile.ToolsFile("<mcp servers>", defs)
		if diags.HasErrors() {
			return fail(fmt.Errorf("the MCP servers list tools Obelisk cannot read: %v", diags))
		}
		decls = append(decls, d...)
	}
	web := httptool.Options{Net: net, Env: env}
	for _, path := range tf.tools {
		b, err := os.ReadFile(path)
		if err != nil {
			return fail(fmt.Errorf("reading tools file: %w", err))
		}
		d, diags := lang.ParseTools(path, b)
		if diags.HasErrors() {
			return fail(fmt.Errorf("%s: %v", path, diags))
		}
		decls = append(decls, d...)
		for _, t := range d {
			if t.Binding == nil {
				continue
			}
			def := planfile.Definition(t)
			var impl toolkit.Tool
			switch t.Binding.Kind {
			case "http":
				impl, err = httptool.New(def, t.Binding.JSON, web)
			case "command":
				impl, err = cmdtool.New(def, t.Binding.JSON, cmdtool.Options{Dir: filepath.Dir(path)})
				if err == nil && !tf.allowCommands {
					msg := fmt.Sprintf("%s runs a program (its command block in %s); command tools are off: start the worker with --allow-commands to let them run", def.Name, path)
					impl = toolkit.ToolFunc(func(context.Context, map[string]any) (any, error) {
						return nil, &toolkit.Error{Code: toolkit.CodeToolError, Message: msg, NotRetryable: true}
					})
				}
			}
			if err != nil {
				return fail(fmt.Errorf("%s: the %s block of %s: %v", path, t.Binding.Kind, def.Name, err))
			}
			if err := reg.Register(def, impl); err != nil {
				return fail(fmt.Errorf("tool %s of %s: a built-in tool or an MCP server's tool has that name: rename one", def.Name, path))
			}
		}
	}
	decls = append(decls, builtinDecls...)
	var mocks *toolkit.Mocks
	if tf.mocks != "" {
		b, err := os.ReadFile(tf.mocks)
		if err != nil {
			return fail(fmt.Errorf("reading mocks: %w", err))
		}
		if mocks, err = toolkit.ParseMocks(b); err != nil {
			return fail(fmt.Errorf("%s: %w", tf.mocks, err))
		}
		// The mocks' tools need signatures: a mocked tool a tools file
		// does not declare is declared by the plan.
	}
	cfg := obtemporal.Config{
		Tools:            toolkit.Chain{Mocks: mocks, Registry: reg},
		Has:              func(name string) bool { return mocks.Has(name) || reg.Has(name) },
		Check:            compiler.Config{Tools: decls, Strict: tf.strict, Limits: tf.limits},
		StepTimeout:      tf.stepTimeout,
		RunTimeout:       tf.runTimeout,
		MaxOutputBytes:   tf.maxOutput,
		MaxParallel:      tf.maxParallel,
		MaxCost:          tf.limits.MaxCost,
		HeartbeatTimeout: tf.heartbeat,
	}
	return cfg, stop, nil
}

// builtinToolsJSON returns the definitions of the built-in tools.
func builtinToolsJSON() []byte {
	reg := toolkit.NewRegistry()
	if err := stdlib.Register(reg, stdlib.Options{FilesRoot: "."}); err != nil {
		return []byte(`{"tools": []}`)
	}
	return reg.ToolsJSON()
}

// stringList is a flag that may be repeated.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
