// Package toolset opens the operator's tools once, from one configuration:
// the built-in tools (stdlib), the tools files (whose definitions may say
// how a tool is called: an http or command block), the MCP servers and
// their parallelism, the files root of the built-in file tools, whether
// command tools run, the mocks, and the grants of network and environment
// access.
//
// A Config is what the operator gave, as a record that serialises to JSON:
// a journaled run keeps it to open the same tools again when it is
// resumed. Open reads each tools file once, parses the built-in tools'
// definitions once, registers the built-in tools once and starts the MCP
// servers once. The Set it returns gives what the rest of the program
// needs of the tools:
//
//   - the signatures the checker reads (Decls, Builtins, and Files, the
//     tools files as a source records them; OfferedOnce, the MCP tools as
//     a model is offered them);
//   - the caller the engine calls (Caller: the mocks in front of the
//     registry of built-in, MCP and bound tools);
//   - a preflight of a compiled program (Preflight): what keeps the tools
//     it calls from running, as problems with a code and the tool's name,
//     which a front end turns into its own advice;
//   - the record (Config) and Close, which stops the MCP servers.
//
// Flags registers the command-line flags that make a Config, for the
// commands that take the operator's tools from their command line.
package toolset

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/stdlib"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/toolkit/cmdtool"
	"github.com/obelisk-plan/obelisk/toolkit/httptool"
	"github.com/obelisk-plan/obelisk/toolkit/mcp"
	"github.com/obelisk-plan/obelisk/toolkit/permission"
)

// BuiltinsName names the built-in tools' definitions among the tools files
// a source records.
const BuiltinsName = "<built-in tools>"

// Config is everything the operator gave of the tools. Its JSON is what a
// journaled run records (the fields a run recorded before there was a
// Config keep their names).
type Config struct {
	// Mocks is the text of a mocks file, whose answers come before every
	// other tool; MocksFile is its name, which Open reads when Mocks is
	// empty.
	Mocks     string `json:"mocks,omitempty"`
	MocksFile string `json:"mocksFile,omitempty"`
	// Files is the directory the built-in file tools may use; they are
	// off without it.
	Files string `json:"files,omitempty"`
	// MCP are the MCP servers, as NAME=COMMAND [ARGS...] (mcp.ParseSpec);
	// MCPParallel bound the calls at once to a server, as NAME=N.
	MCP         []string `json:"mcp,omitempty"`
	MCPParallel []string `json:"mcpParallel,omitempty"`
	// AllowCommands lets command tools run their programs.
	AllowCommands bool `json:"allowCommands,omitempty"`
	// Tools are the tools files: Name as given, Text as read (Open reads
	// a file whose Text is empty).
	Tools []planfile.File `json:"tools,omitempty"`
	// Grants are the grants of network and environment access, as the
	// arguments permission.Flags reads (permission.Flags.Args).
	Grants []string `json:"grants,omitempty"`
}

// Record returns the configuration as a journaled run records it: without
// the tools files, which the run's source holds, and without the grants,
// which are those of the command that resumes it, never a journal's.
func (c Config) Record() Config {
	c.Tools, c.Grants = nil, nil
	return c
}

// OperatorFiles returns the tools files among the files a source records:
// not the built-in tools' nor an MCP server's, whose names are in angle
// brackets.
func OperatorFiles(files []planfile.File) []planfile.File {
	var out []planfile.File
	for _, f := range files {
		if !strings.HasPrefix(f.Name, "<") {
			out = append(out, f)
		}
	}
	return out
}

// Options are how Open opens the tools.
type Options struct {
	// Log receives what the MCP servers write on their standard error, and
	// notes; nil discards them.
	Log hclog.Logger
	// WorkDir is the directory the tools files' names are relative to,
	// for the directory a command tool runs in; "" is the current one.
	WorkDir string
	// Explain is the message a command tool fails with while command tools
	// are off; nil uses the problem's own text.
	Explain func(Problem) string
}

// Code says what an Error of Open is about.
type Code string

// The codes of Open's errors.
const (
	// CodeMCPSpec: an MCP server's spec cannot be read, or two servers
	// have one name.
	CodeMCPSpec Code = "mcp-spec"
	// CodeMCPParallel: a bound of calls is not NAME=N.
	CodeMCPParallel Code = "mcp-parallel"
	// CodeMCPUnknown: a bound of calls names no server.
	CodeMCPUnknown Code = "mcp-unknown"
	// CodeMCPStart: an MCP server cannot be started or listed.
	CodeMCPStart Code = "mcp-start"
	// CodeMCPTools: an MCP server lists tools Obelisk cannot read.
	CodeMCPTools Code = "mcp-tools"
	// CodeToolsFile: a tools file cannot be read.
	CodeToolsFile Code = "tools-file"
	// CodeMocks: the mocks file cannot be read or parsed (an error of
	// Caller).
	CodeMocks Code = "mocks"
	// CodeGrants: the grants cannot be read.
	CodeGrants Code = "grants"
	// CodeBuiltins: the built-in tools cannot be registered.
	CodeBuiltins Code = "builtins"
)

// Error is an error of Open: Code says what it is about, Name the server,
// file or bound it names.
type Error struct {
	Code Code
	Name string
	Err  error
}

// Error returns the error's text.
func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

func errorf(code Code, name, format string, args ...any) *Error {
	return &Error{Code: code, Name: name, Err: fmt.Errorf(format, args...)}
}

// Set is the operator's tools, opened.
type Set struct {
	cfg  Config
	opts Options
	reg  *toolkit.Registry
	// regErr is why a bound tool could not be registered: a name taken;
	// mocksErr why the mocks cannot be read.
	regErr, mocksErr error
	mocks            *toolkit.Mocks
	net              *permission.Net
	env              *permission.Env

	servers  []*mcp.Server
	bindings []mcp.Binding
	// fileDecls, mcpDecls and builtinDecls are the signatures of the
	// tools files', the MCP servers' and the built-in tools.
	fileDecls, mcpDecls, builtinDecls []*lang.ToolDecl
	builtinDefs                       []toolkit.Definition
	// files are the tools files, the MCP servers' tools and the built-in
	// tools as a source records them; mcpFiles the MCP servers' alone.
	files, mcpFiles []planfile.File
	// readDiags are the tools files' diagnostics; bindDiags those of their
	// http and command blocks.
	readDiags, bindDiags lang.Diagnostics
	bound                []*bound
	commandsOff          bool

	// counts are how often Open did the work it does once.
	counts counts
}

// counts are how often Open registered the built-in tools, parsed their
// definitions and read each tools file.
type counts struct {
	register, parseBuiltins int
	reads                   map[string]int
}

// bound is a tool a tools file says how to call.
type bound struct {
	def  toolkit.Definition
	kind string // "http" or "command"
	impl toolkit.Tool
	file string
}

// Open opens the tools cfg names. It returns an *Error when a tools file,
// a server or a bound cannot be read or started; the tools files'
// diagnostics (Diagnostics, BindDiagnostics) and the mocks (see Caller) do
// not stop it. The caller closes the set.
func Open(ctx context.Context, cfg Config, opts Options) (*Set, error) {
	if opts.Log == nil {
		opts.Log = hclog.NewNullLogger()
	}
	s := &Set{cfg: cfg, opts: opts, reg: toolkit.NewRegistry(), counts: counts{reads: map[string]int{}}}
	s.cfg.Tools = slices.Clone(cfg.Tools)
	s.cfg.MCP, s.cfg.MCPParallel, s.cfg.Grants = slices.Clone(cfg.MCP), slices.Clone(cfg.MCPParallel), slices.Clone(cfg.Grants)
	var err error
	if s.net, s.env, err = policies(cfg.Grants); err != nil {
		return nil, &Error{Code: CodeGrants, Err: err}
	}
	if err := s.open(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Set) open(ctx context.Context) error {
	s.counts.register++
	if err := stdlib.Register(s.reg, stdlib.Options{FilesRoot: s.cfg.Files, Net: s.net}); err != nil {
		return &Error{Code: CodeBuiltins, Err: err}
	}
	s.builtinDefs = stdlib.Definitions()
	s.counts.parseBuiltins++
	var builtins planfile.File
	builtins, s.builtinDecls, _ = planfile.ToolsFile(BuiltinsName, s.builtinDefs)
	if err := s.startMCP(ctx); err != nil {
		return err
	}
	if err := s.readTools(); err != nil {
		return err
	}
	s.mocksErr = s.readMocks()
	s.files = append(s.files, s.cfg.Tools...)
	s.files = append(s.files, s.mcpFiles...)
	s.files = append(s.files, builtins)
	s.bind()
	return nil
}

// policies makes the grants of arguments such as --allow-net=HOST.
func policies(args []string) (*permission.Net, *permission.Env, error) {
	var pf permission.Flags
	fs := flag.NewFlagSet("grants", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	pf.Register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, nil, fmt.Errorf("the grants %q: %w", args, err)
	}
	if fs.NArg() > 0 {
		return nil, nil, fmt.Errorf("the grants %q: %q is not a grant", args, fs.Arg(0))
	}
	net, env := pf.Policies()
	return net, env, nil
}

// parallel reads the bounds of calls at once, by server, which bound the
// writes too (a server none names has one write at a time, the library's
// default).
func parallel(list []string) (map[string]int, error) {
	out := map[string]int{}
	for _, v := range list {
		name, n, ok := strings.Cut(v, "=")
		k, err := strconv.Atoi(n)
		if !ok || name == "" || err != nil || k < 1 {
			return nil, errorf(CodeMCPParallel, v, "%q: give NAME=N, with N a whole number of calls, 1 or more", v)
		}
		out[name] = k
	}
	return out, nil
}

// startMCP starts the MCP servers, binds their tools by the names plans
// call them by and parses their signatures.
func (s *Set) startMCP(ctx context.Context) error {
	bounds, err := parallel(s.cfg.MCPParallel)
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for _, spec := range s.cfg.MCP {
		name, argv, err := mcp.ParseSpec(spec)
		if err == nil && names[name] {
			err = fmt.Errorf("two servers are named %s", name)
		}
		if err != nil {
			return &Error{Code: CodeMCPSpec, Name: spec, Err: err}
		}
		names[name] = true
		log := s.opts.Log.Named("mcp").With("server", name)
		srv, err := mcp.Start(ctx, name, argv, mcp.Options{Stderr: log.StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Info}), MaxParallel: bounds[name], MaxWrites: bounds[name]})
		if err != nil {
			return &Error{Code: CodeMCPStart, Name: name, Err: err}
		}
		log.Info("started", "tools", len(srv.Tools()))
		s.servers = append(s.servers, srv)
	}
	for _, v := range s.cfg.MCPParallel {
		name, _, _ := strings.Cut(v, "=")
		if !names[name] {
			return errorf(CodeMCPUnknown, name, "%s: no server is named %s", name, name)
		}
	}
	builtin := map[string]bool{}
	for _, d := range s.builtinDecls {
		builtin[d.Name.Name] = true
	}
	for _, b := range mcp.Bind(s.servers, func(name string) bool { return builtin[name] }) {
		if !lang.IsToolName(b.Definition.Name) {
			if b.Definition.Name == b.Tool { // said once, for the bare name
				s.opts.Log.Warn("skipping a tool whose name a plan cannot call (identifiers joined by . or -)", "server", b.Server.Name(), "tool", b.Tool)
			}
			continue
		}
		s.bindings = append(s.bindings, b)
		if err := s.reg.Register(b.Definition, b); err != nil {
			return errorf(CodeMCPTools, b.Server.Name(), "%s: %w", b.Server, err)
		}
	}
	for _, srv := range s.servers {
		var defs []toolkit.Definition
		for _, b := range s.bindings {
			if b.Server == srv {
				defs = append(defs, b.Definition)
			}
		}
		f, decls, diags := planfile.ToolsFile("<"+srv.String()+">", defs)
		if diags.HasErrors() {
			return errorf(CodeMCPTools, srv.Name(), "%s lists tools Obelisk cannot read: %v", srv, diags)
		}
		s.mcpFiles = append(s.mcpFiles, f)
		s.mcpDecls = append(s.mcpDecls, decls...)
	}
	return nil
}

// readTools reads the tools files whose text the configuration does not
// hold, and parses them.
func (s *Set) readTools() error {
	for i, f := range s.cfg.Tools {
		if f.Text == "" {
			s.counts.reads[f.Name]++
			b, err := os.ReadFile(f.Name)
			if err != nil {
				return &Error{Code: CodeToolsFile, Name: f.Name, Err: fmt.Errorf("reading tools file: %w", err)}
			}
			s.cfg.Tools[i].Text = string(b)
		}
		decls, diags := lang.ParseTools(f.Name, []byte(s.cfg.Tools[i].Text))
		s.readDiags = append(s.readDiags, diags...)
		s.fileDecls = append(s.fileDecls, decls...)
	}
	return nil
}

// readMocks reads and parses the mocks.
func (s *Set) readMocks() error {
	if s.cfg.Mocks == "" && s.cfg.MocksFile != "" {
		b, err := os.ReadFile(s.cfg.MocksFile)
		if err != nil {
			return &Error{Code: CodeMocks, Name: s.cfg.MocksFile, Err: fmt.Errorf("reading mocks: %w", err)}
		}
		s.cfg.Mocks = string(b)
	}
	if s.cfg.Mocks == "" {
		return nil
	}
	m, err := toolkit.ParseMocks([]byte(s.cfg.Mocks))
	if err != nil {
		return &Error{Code: CodeMocks, Name: s.cfg.MocksFile, Err: fmt.Errorf("%s: %w", s.cfg.MocksFile, err)}
	}
	s.mocks = m
	return nil
}

// bind makes and registers the tools whose definitions in a tools file
// have an http or command block. Command tools run only when the
// configuration allows them; otherwise they are registered to fail with a
// message that says so. A block that is wrong is a diagnostic at the
// block (BindDiagnostics); a name another tool has is an error of Caller.
func (s *Set) bind() {
	web := httptool.Options{Net: s.net, Env: s.env}
	decls := slices.Clone(s.fileDecls)
	slices.SortStableFunc(decls, func(a, b *lang.ToolDecl) int { return strings.Compare(a.Name.Name, b.Name.Name) })
	for _, d := range decls {
		b := d.Binding
		if b == nil {
			continue
		}
		fileDir := filepath.Dir(b.File)
		if s.opts.WorkDir != "" && !filepath.IsAbs(b.File) {
			fileDir = filepath.Join(s.opts.WorkDir, fileDir)
		}
		def := planfile.Definition(d)
		bt := &bound{def: def, kind: b.Kind, file: b.File}
		var err error
		switch b.Kind {
		case "http":
			bt.impl, err = httptool.New(def, b.JSON, web)
		case "command":
			bt.impl, err = cmdtool.New(def, b.JSON, cmdtool.Options{Dir: fileDir})
		}
		if err != nil {
			s.bindDiags = append(s.bindDiags, &lang.Diagnostic{Severity: lang.SeverityError, Code: lang.ImportError, File: b.File, Span: b.Span,
				Message: fmt.Sprintf("the %s block of %s: %v", b.Kind, d.Name.Name, err)})
			continue
		}
		s.bound = append(s.bound, bt)
		impl := bt.impl
		if bt.kind == "command" && !s.cfg.AllowCommands {
			msg := s.explain(Problem{Code: CommandsOff, Tool: def.Name, File: bt.file})
			impl = toolkit.ToolFunc(func(context.Context, map[string]any) (any, error) {
				return nil, &toolkit.Error{Code: toolkit.CodeToolError, Message: msg, NotRetryable: true}
			})
			s.commandsOff = true
		}
		if err := s.reg.Register(def, impl); err != nil && s.regErr == nil {
			s.regErr = fmt.Errorf("tool %s of %s: a built-in tool or an MCP server's tool has that name: rename one", def.Name, bt.file)
		}
	}
}

func (s *Set) explain(p Problem) string {
	if s.opts.Explain != nil {
		return s.opts.Explain(p)
	}
	return p.Error()
}

// Close stops the MCP servers.
func (s *Set) Close() error {
	var errs []error
	for _, srv := range s.servers {
		if err := srv.Close(); err != nil {
			errs = append(errs, fmt.Errorf("stopping MCP server %s: %w", srv.Name(), err))
		}
	}
	s.servers = nil
	return errors.Join(errs...)
}

// Config returns the configuration the set was opened with, the tools
// files' and the mocks' texts as read.
func (s *Set) Config() Config {
	c := s.cfg
	c.Tools = slices.Clone(s.cfg.Tools)
	return c
}

// Caller returns the tools a run calls: the mocks in front of the
// registry. It fails when the mocks cannot be read (an *Error, code
// CodeMocks), or a tools file's bound tool has the name of a built-in tool
// or an MCP server's tool: what keeps the tools from being called, not
// their signatures from being known, which is why Open does not fail.
func (s *Set) Caller() (toolkit.Chain, error) {
	if s.mocksErr != nil {
		return toolkit.Chain{}, s.mocksErr
	}
	if s.regErr != nil {
		return toolkit.Chain{}, s.regErr
	}
	return toolkit.Chain{Mocks: s.mocks, Registry: s.reg}, nil
}

// Has reports whether a tool has an implementation: the registry's or the
// mocks'.
func (s *Set) Has(name string) bool { return s.reg.Has(name) || s.mocks.Has(name) }

// Grants returns the grants as arguments (permission.Flags.Args form),
// sorted within each grant, for a fingerprint of what the tools may reach.
func (s *Set) Grants() []string { return slices.Clone(s.cfg.Grants) }
