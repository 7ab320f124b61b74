package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/stdlib"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/toolkit/cmdtool"
	"github.com/obelisk-plan/obelisk/toolkit/httptool"
	"github.com/obelisk-plan/obelisk/toolkit/mcp"
)

// Tools from outside the plan: MCP servers (--mcp), and tools files whose
// definitions say how a tool is called (an "http" or "command" block).

// mcpServers are the MCP servers a command started, and their tools under
// the names plans call them by.
type mcpServers struct {
	servers  []*mcp.Server
	bindings []mcp.Binding
	decls    []*lang.ToolDecl // the tools' signatures, for the checker
	// files are the servers' tools as tools files, which a run records.
	files []planfile.File
}

// connect starts the servers --mcp names and lists their tools. It
// returns the function that stops them, or nil and the exit status when
// one cannot be started or listed.
func (cf *checkFlags) connect(ctx context.Context, e *env, cmd string) (func(), int) {
	ms := &mcpServers{}
	stop := func() {
		for _, s := range ms.servers {
			if err := s.Close(); err != nil {
				e.log.Warn("stopping an MCP server", "error", err)
			}
		}
	}
	parallel, err := cf.parallel()
	if err != nil {
		return nil, usageError(e, cmd, "--mcp-parallel %v", err)
	}
	names := map[string]bool{}
	for _, spec := range cf.mcp {
		name, argv, err := mcp.ParseSpec(spec)
		if err == nil && names[name] {
			err = fmt.Errorf("two servers are named %s", name)
		}
		if err != nil {
			stop()
			return nil, usageError(e, cmd, "--mcp %v", err)
		}
		names[name] = true
		log := e.log.Named("mcp").With("server", name)
		s, err := mcp.Start(ctx, name, argv, mcp.Options{Stderr: log.StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Info}), MaxParallel: parallel[name], MaxWrites: parallel[name]})
		if err != nil {
			stop()
			fmt.Fprintf(e.stderr, "obelisk %s: %v\n", cmd, err)
			return nil, exitUsage
		}
		log.Info("started", "tools", len(s.Tools()))
		ms.servers = append(ms.servers, s)
	}
	for name := range parallel {
		if !names[name] {
			stop()
			return nil, usageError(e, cmd, "--mcp-parallel %s: no server is named %s: name one of --mcp", name, name)
		}
	}
	builtin := map[string]bool{}
	for _, d := range builtinSignatures() {
		builtin[d.Name.Name] = true
	}
	byServer := map[*mcp.Server][]toolkit.Definition{}
	for _, b := range mcp.Bind(ms.servers, func(name string) bool { return builtin[name] }) {
		if !lang.IsToolName(b.Definition.Name) {
			if b.Definition.Name == b.Tool { // said once, for the bare name
				e.log.Warn("skipping a tool whose name a plan cannot call (identifiers joined by . or -)", "server", b.Server.Name(), "tool", b.Tool)
			}
			continue
		}
		ms.bindings = append(ms.bindings, b)
		byServer[b.Server] = append(byServer[b.Server], b.Definition)
	}
	for _, s := range ms.servers {
		f, decls, diags := planfile.ToolsFile("<"+s.String()+">", byServer[s])
		ms.files = append(ms.files, f)
		if diags.HasErrors() {
			stop()
			fmt.Fprintf(e.stderr, "obelisk %s: %s lists tools Obelisk cannot read: %v\n", cmd, s, diags)
			return nil, exitUsage
		}
		ms.decls = append(ms.decls, decls...)
	}
	cf.servers = ms
	return stop, exitOK
}

// parallel reads --mcp-parallel: the bound of calls at once, by server,
// which bounds the writes too (a server it does not name has one write at
// a time, the library's default).
func (cf *checkFlags) parallel() (map[string]int, error) {
	out := map[string]int{}
	for _, v := range cf.mcpParallel {
		name, n, ok := strings.Cut(v, "=")
		k, err := strconv.Atoi(n)
		if !ok || name == "" || err != nil || k < 1 {
			return nil, fmt.Errorf("%q: give NAME=N, with N a whole number of calls, 1 or more", v)
		}
		out[name] = k
	}
	return out, nil
}

// registerMCP adds the MCP servers' tools to a registry.
func (cf *checkFlags) registerMCP(reg *toolkit.Registry) error {
	if cf.servers == nil {
		return nil
	}
	for _, b := range cf.servers.bindings {
		if err := reg.Register(b.Definition, b); err != nil {
			return fmt.Errorf("%s: %w", b.Server, err)
		}
	}
	return nil
}

// serverTools lists the tools of an MCP server, by the names a plan
// calls them by, for a hint that routes to the server.
func (cf *checkFlags) serverTools(server string) ([]string, error) {
	var out []string
	found := false
	if cf.servers != nil {
		for _, s := range cf.servers.servers {
			found = found || s.Name() == server
		}
		for _, b := range cf.servers.bindings {
			if b.Server.Name() == server {
				out = append(out, b.Definition.Name)
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("it routes to MCP server %s, which no --mcp starts", server)
	}
	return out, nil
}

// mcpDecls returns the signatures of the MCP servers' tools.
func (cf *checkFlags) mcpDecls() []*lang.ToolDecl {
	if cf.servers == nil {
		return nil
	}
	return cf.servers.decls
}

// offeredMCPDecls returns the signatures of the MCP servers' tools as a
// model is offered them: each tool once, by its bare name unless another
// server or a built-in tool has that name, then as SERVER.TOOL.
func (cf *checkFlags) offeredMCPDecls() []*lang.ToolDecl {
	if cf.servers == nil {
		return nil
	}
	bare := map[string]bool{} // server.tool, for the tools bound by their bare name
	for _, b := range cf.servers.bindings {
		if b.Definition.Name == b.Tool {
			bare[b.Server.Name()+"."+b.Tool] = true
		}
	}
	var out []*lang.ToolDecl
	for _, d := range cf.servers.decls {
		if !bare[d.Name.Name] {
			out = append(out, d)
		}
	}
	return out
}

// boundTool is a tool a tools file says how to call.
type boundTool struct {
	def  toolkit.Definition
	kind string // "http" or "command"
	impl toolkit.Tool
	file string
}

// bindTools makes the tools whose operator's definitions (a --tools file)
// have an "http" or "command" block. An imported file's blocks are never
// bound: a plan cannot say how a tool is reached. base is the directory
// the tools files' names are relative to ("" for the current one); web
// holds the grants of HTTP tools. A block that is wrong is a diagnostic at
// the block.
func bindTools(tools []*compiler.Tool, base string, web httptool.Options) ([]*boundTool, lang.Diagnostics) {
	var out []*boundTool
	var diags lang.Diagnostics
	for _, t := range tools {
		d := t.Decl
		if d == nil || d.Binding == nil || t.File != "" {
			continue
		}
		b := d.Binding
		fileDir := filepath.Dir(b.File)
		if base != "" && !filepath.IsAbs(b.File) {
			fileDir = filepath.Join(base, fileDir)
		}
		def := planfile.Definition(d)
		bt := &boundTool{def: def, kind: b.Kind, file: b.File}
		var err error
		switch b.Kind {
		case "http":
			bt.impl, err = httptool.New(def, b.JSON, web)
		case "command":
			bt.impl, err = cmdtool.New(def, b.JSON, cmdtool.Options{Dir: fileDir})
		}
		if err != nil {
			diags = append(diags, &lang.Diagnostic{Severity: lang.SeverityError, Code: lang.ImportError, File: b.File, Span: b.Span,
				Message: fmt.Sprintf("the %s block of %s: %v", b.Kind, t.Name, err)})
			continue
		}
		out = append(out, bt)
	}
	return out, diags
}

// sortedTools returns the tools of a checked plan, sorted by name.
func sortedTools(info *compiler.Info) []*compiler.Tool {
	if info == nil {
		return nil
	}
	out := make([]*compiler.Tool, 0, len(info.Tools))
	for _, t := range info.Tools {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// registerBound adds bound tools to a registry. Command tools run only
// with --allow-commands; without it they are registered to fail with a
// message that says so, and their names are returned.
func (rf *runFlags) registerBound(reg *toolkit.Registry, bound []*boundTool) (off []string, err error) {
	for _, bt := range bound {
		impl := bt.impl
		if bt.kind == "command" && !rf.allowCommands {
			impl = toolkit.ToolFunc(func(context.Context, map[string]any) (any, error) {
				return nil, &toolkit.Error{Code: toolkit.CodeToolError, Message: commandsOff(bt), NotRetryable: true}
			})
			off = append(off, bt.def.Name)
		}
		if err := reg.Register(bt.def, impl); err != nil {
			return nil, fmt.Errorf("tool %s of %s: a built-in tool or an MCP server's tool has that name: rename one", bt.def.Name, bt.file)
		}
	}
	return off, nil
}

func commandsOff(bt *boundTool) string {
	return fmt.Sprintf("%s runs a program (its command block in %s); command tools are off: run again with --allow-commands to let them run", bt.def.Name, bt.file)
}

// preflight says what keeps the tools the plan calls from running, before
// anything runs: a command tool while command tools are off, a built-in
// network tool while the network is off, an HTTP tool whose environment
// variables are not granted or not set or whose host is not allowed.
// Tools the mocks answer are not called, so nothing keeps them.
func (p *prepared) preflight() []string {
	bound := map[string]*boundTool{}
	for _, bt := range p.bound {
		bound[bt.def.Name] = bt
	}
	var out []string
	for _, name := range p.calledTools() {
		if p.mocks.Has(name) {
			continue
		}
		if p.netOff && stdlib.NeedsNetwork(name) && bound[name] == nil {
			out = append(out, fmt.Sprintf("%s reaches the network, which is off: run again with --allow-net=HOST,… naming the hosts the plan may reach (bare --allow-net: any public host), or answer it in a mocks file", name))
			continue
		}
		bt := bound[name]
		if bt == nil {
			continue
		}
		switch impl := bt.impl.(type) {
		case *cmdtool.Tool:
			if p.commandsOff {
				out = append(out, commandsOff(bt))
			}
		case *httptool.Tool:
			if err := impl.CheckEnv(); err != nil {
				out = append(out, fmt.Sprintf("%s reads the environment (its http block in %s): %v", bt.def.Name, bt.file, err))
			} else if missing := impl.MissingEnv(); len(missing) > 0 {
				out = append(out, fmt.Sprintf("%s needs the environment variable %s (its http block in %s): set it, or answer the tool in a mocks file", bt.def.Name, strings.Join(missing, ", "), bt.file))
			} else if err := impl.CheckNet(); err != nil {
				out = append(out, fmt.Sprintf("%s (its http block in %s): %v", bt.def.Name, bt.file, err))
			}
		}
	}
	return out
}
