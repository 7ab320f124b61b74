// Package mcpserver serves Obelisk's plan mode to MCP clients: instead of
// calling tools one at a time, with every schema in its prompt and every
// intermediate result in its context, a model writes one plan, which is
// checked against the tools' real signatures before anything runs, and
// gets back the plan's output alone.
//
// The server offers the model these tools: get_primer (the language),
// search_tools (signatures of the tools that match some words, so that not
// every schema sits in the prompt), check_plan (the checker's diagnostics,
// as `obelisk check --format json` gives them), dry_run_plan (the
// schedule and invented values, with no side effect), run_plan (the
// output and a one-line summary), run_status and resume_run (a run that
// outlives a call, by its ID). The primer and the tools' signatures are
// resources too (obelisk://primer, obelisk://tools, obelisk://tools/NAME),
// and write_plan a prompt. What the model reads is generated from the
// language reference and the tools, not written by hand.
//
// Runs are durable (package durable): journaled as they go, resumable by
// ID. Each records its origin, the server's name and a fingerprint of its
// grants (Options.Name, Options.Grants); the server reads, reports and
// resumes only runs of its own origin, named by their whole ID, and
// answers for any other run as for one that does not exist. A run that
// takes longer than a call goes on in the server, with progress
// notifications while a call follows it. An approval gate asks
// the person through the client (MCP elicitation) when the client can
// ask; otherwise the run is saved as waiting, and the answer says how a
// person decides (`obelisk approve`). No tool approves: the model cannot
// decide on a person's behalf. Every plan is checked strictly: an
// irreversible call without an approval gate is an error.
//
// The tools a plan may call, and their grants, are the operator's: the
// program that embeds the server gives them (Options.Tools, Caller), as
// cmd/obelisk does from its command line.
package mcpserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/vm"
)

// Options configure a Server. Tools, Caller and Store are required.
type Options struct {
	// Version is the server's version, as it introduces itself.
	Version string
	// Tools are the definitions of the tools a plan may call, as tools
	// files (MCP tools/list JSON), in the order the checker takes them:
	// the operator's tools files, the MCP servers' tools, the built-in
	// tools. A run records them, to be resumed with the same signatures.
	Tools []planfile.File
	// Caller calls the tools.
	Caller vm.Caller
	// Preflight, when set, says what keeps the tools of a compiled plan
	// from running (a tool without an implementation, command tools off,
	// the network off): a run with problems is refused before it starts.
	Preflight func(prog *compiler.Program) []string
	// Store journals the runs.
	Store *durable.Store
	// Settings are recorded with every run: its limits, its approval
	// policy, and what the program needs to build its tools again when
	// the run is resumed elsewhere (obelisk resume).
	Settings durable.Settings
	// Limits bound the plans; MaxParallel the steps running at once
	// (default 8).
	Limits      compiler.Limits
	MaxParallel int
	// ApproveAll approves every approval gate (the operator's --yes).
	// Without it a gate asks the person through the client, when it can
	// ask, and otherwise waits for `obelisk approve`.
	ApproveAll bool
	// NoElicitation never asks through the client: every gate waits for
	// a decision recorded with `obelisk approve`.
	NoElicitation bool
	// ApproveCommand is the command a person runs to decide, for the
	// answers of waiting runs (default "obelisk approve").
	ApproveCommand string
	// Wait is how long a call waits for a run before it answers that the
	// run goes on (default 30s); a call may ask for up to MaxWait
	// (default 10m).
	Wait, MaxWait time.Duration
	// WorkDir is the directory runs record as theirs (planfile.Source).
	WorkDir string
	// Name names the server instance, as the operator gave it; "" is a
	// name too.
	Name string
	// Advise, when set, rewrites the text of every answer of the
	// server's tools before the client reads it: a command line turns
	// the library's names of limits and grants ("(vm.Options.RunTimeout)")
	// into advice about its own flags. It must keep JSON text JSON.
	Advise func(string) string
	// Grants describe what the tools may reach besides their definitions
	// (the permission grants, the MCP servers behind the tools, the
	// directory of the file tools…), in any form the program chooses that
	// is equal for equal grants. Every run the server makes records its
	// origin: Name, and a fingerprint of Grants, Tools and ApproveAll. The
	// server reads, reports and resumes only runs of that same origin.
	Grants string
	// Log receives what the server logs (default: nothing).
	Log hclog.Logger
}

// Server is an MCP server of plan mode. Its methods are safe for
// concurrent use.
type Server struct {
	opts    Options
	mcp     *sdk.Server
	catalog *catalog
	primer  string
	// short is get_primer's default answer; sections the language
	// primer's parts by name, in order.
	short    string
	sections map[string]string
	names    []string
	// ctx bounds the runs, which outlive the calls that start them; stop
	// cancels it.
	ctx  context.Context
	stop context.CancelFunc
	runs sync.WaitGroup
	mu   sync.Mutex
	// active are the runs executing in this process, by ID.
	active map[string]*activeRun
	// origin is what the server's runs record as their origin.
	origin durable.Origin
}

// New makes a server.
func New(opts Options) (*Server, error) {
	if opts.Caller == nil || opts.Store == nil {
		return nil, errors.New("mcpserver: Options.Caller and Options.Store are required")
	}
	if opts.MaxParallel <= 0 {
		opts.MaxParallel = 8
	}
	if opts.Wait <= 0 {
		opts.Wait = 30 * time.Second
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = 10 * time.Minute
	}
	opts.MaxWait = max(opts.MaxWait, opts.Wait)
	if opts.ApproveCommand == "" {
		opts.ApproveCommand = "obelisk approve"
	}
	if opts.Log == nil {
		opts.Log = hclog.NewNullLogger()
	}
	cat, err := newCatalog(opts.Tools)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, catalog: cat, active: map[string]*activeRun{}}
	if s.origin, err = origin(opts); err != nil {
		return nil, err
	}
	s.ctx, s.stop = context.WithCancel(context.Background())
	s.primer = primer(cat)
	s.sections, s.names = primerSections()
	s.short = shortPrimer(s.primer, s.sections, s.names)
	s.mcp = sdk.NewServer(&sdk.Implementation{Name: "obelisk", Title: "Obelisk plan mode", Version: opts.Version}, &sdk.ServerOptions{
		Instructions: instructions,
		// Approvals ask the person with server-initiated elicitation,
		// which the protocol's newer versions replace; a client of one
		// of them negotiates the newest version below.
		SupportedProtocolVersions: protocolVersions(),
		Capabilities:              &sdk.ServerCapabilities{},
	})
	s.addTools()
	s.addResources()
	return s, nil
}

// origin returns the origin of the runs a server of opts makes: its name,
// and a fingerprint of its tools, grants and approval policy.
func origin(opts Options) (durable.Origin, error) {
	b, err := json.Marshal(struct {
		Tools      []planfile.File `json:"tools"`
		Grants     string          `json:"grants"`
		ApproveAll bool            `json:"approveAll"`
	}{opts.Tools, opts.Grants, opts.ApproveAll})
	if err != nil {
		return durable.Origin{}, fmt.Errorf("mcpserver: the fingerprint of the grants: %w", err)
	}
	sum := sha256.Sum256(b)
	return durable.Origin{By: durable.ByMCPServer, Name: opts.Name, Grants: hex.EncodeToString(sum[:])}, nil
}

// protocolVersions are the MCP versions the server speaks: those whose
// servers may send requests (elicitation) to the client.
func protocolVersions() []string {
	var out []string
	for _, v := range sdk.SupportedProtocolVersions() {
		if v < "2026-07-28" {
			out = append(out, v)
		}
	}
	return out
}

// Run serves one client over a transport until the client goes away or
// ctx ends. Runs still executing go on until Close. A server a client
// starts serves it with RunStdio, which screens its messages.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	return s.mcp.Run(ctx, t)
}

// sessionTimeout closes an HTTP client's session after this long without
// a request; its runs go on.
const sessionTimeout = time.Hour

// HTTPOptions configure Handler.
type HTTPOptions struct {
	// Token, when set, must come with every request, as the header
	// "Authorization: Bearer TOKEN"; a request without it is refused
	// (401) before the MCP layer sees it.
	Token string
}

// Handler serves clients over MCP's streamable HTTP transport, each in a
// session of its own. A message the SDK would refuse is answered with a
// JSON-RPC error. Requests from a browser page of another origin are
// refused, and so are requests to a loopback address with another host
// name (DNS rebinding).
func (s *Server) Handler(opts HTTPOptions) http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.mcp }, &sdk.StreamableHTTPOptions{SessionTimeout: sessionTimeout})
	protected := http.NewCrossOriginProtection().Handler(screenHTTP(h))
	if opts.Token == "" {
		return protected
	}
	want := []byte("Bearer " + opts.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="obelisk"`)
			http.Error(w, "obelisk mcp-server: give the token the server printed when it started: Authorization: Bearer TOKEN", http.StatusUnauthorized)
			return
		}
		protected.ServeHTTP(w, r)
	})
}

// Close cancels the runs still executing and waits until each is recorded
// (as canceled: obelisk resume continues it).
func (s *Server) Close() error {
	s.stop()
	s.runs.Wait()
	return nil
}

// Primer returns the text that teaches a model to write plans for the
// server's tools, whole: what get_primer answers when asked for all of it
// (by default it answers with the first part).
func (s *Server) Primer() string { return s.primer }

// warn logs a problem that the client is not told about.
func (s *Server) warn(msg string, args ...any) { s.opts.Log.Warn(msg, args...) }

// waitFor returns how long a call waits: the seconds it asks for, within
// MaxWait, or Wait.
func (s *Server) waitFor(seconds *float64) time.Duration {
	if seconds == nil || *seconds < 0 {
		return s.opts.Wait
	}
	return min(time.Duration(*seconds*float64(time.Second)), s.opts.MaxWait)
}

// approveCommand returns the command that decides an approval of a run.
func (s *Server) approveCommand(run, step string) string {
	cmd := fmt.Sprintf("%s %s", s.opts.ApproveCommand, run)
	if step != "" {
		cmd += " " + step
	}
	return strings.TrimSpace(cmd)
}
