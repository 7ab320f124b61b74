package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/obelisk-plan/obelisk/toolset"
)

// The operator's tools (toolset): the built-in tools, the tools files
// (--tools) whose definitions may say how a tool is called (an "http" or
// "command" block), the MCP servers (--mcp), the mocks and the grants.

// connect opens the tools the flags name: it starts the MCP servers --mcp
// names and lists their tools, reads the tools files and the mocks. It
// returns the function that stops the servers, or nil and the exit status
// when the tools cannot be opened.
func (cf *checkFlags) connect(ctx context.Context, e *env, cmd string) (func(), int) {
	cfg, err := cf.tf.Config()
	if err != nil {
		e.Errorf("%v", err)
		return nil, exitUsage
	}
	cfg.MocksFile = cf.mocksFile
	set, stop, status := openTools(ctx, e, cmd, cfg, "")
	if set == nil {
		return nil, status
	}
	cf.set = set
	return stop, exitOK
}

// openTools opens the tools of cfg; workDir is the directory the tools
// files' names are relative to ("" for the current one). It returns the
// set and the function that closes it, or nil and the exit status, having
// said why.
func openTools(ctx context.Context, e *env, cmd string, cfg toolset.Config, workDir string) (*toolset.Set, func(), int) {
	set, err := toolset.Open(ctx, cfg, toolset.Options{Log: e.log, WorkDir: workDir, Explain: toolAdvice})
	if err != nil {
		var te *toolset.Error
		if !errors.As(err, &te) {
			e.Errorf("%v", err)
			return nil, nil, exitUsage
		}
		switch te.Code {
		case toolset.CodeMCPSpec:
			return nil, nil, usageError(e, cmd, "--mcp %v", err)
		case toolset.CodeMCPParallel:
			return nil, nil, usageError(e, cmd, "--mcp-parallel %v", err)
		case toolset.CodeMCPUnknown:
			return nil, nil, usageError(e, cmd, "--mcp-parallel %v: name one of --mcp", err)
		}
		fmt.Fprintf(e.Stderr, "obelisk %s: %v\n", cmd, err)
		return nil, nil, exitUsage
	}
	stop := func() {
		if err := set.Close(); err != nil {
			e.log.Warn("stopping an MCP server", "error", err)
		}
	}
	return set, stop, exitOK
}

// serverTools lists the tools of an MCP server, by the names a plan
// calls them by, for a hint that routes to the server.
func (cf *checkFlags) serverTools(server string) ([]string, error) {
	out, found := cf.set.MCPTools(server)
	if !found {
		return nil, fmt.Errorf("it routes to MCP server %s, which no --mcp starts", server)
	}
	return out, nil
}

// toolAdvice says what keeps a tool from running, and which flag or file
// lets it run.
func toolAdvice(p toolset.Problem) string {
	switch p.Code {
	case toolset.CommandsOff:
		return fmt.Sprintf("%s runs a program (its command block in %s); command tools are off: run again with --allow-commands to let them run", p.Tool, p.File)
	case toolset.NetworkOff:
		return fmt.Sprintf("%s reaches the network, which is off: run again with --allow-net=HOST,… naming the hosts the plan may reach (bare --allow-net: any public host), or answer it in a mocks file", p.Tool)
	case toolset.EnvUnset:
		return fmt.Sprintf("%s needs the environment variable %s (its http block in %s): set it, or answer the tool in a mocks file", p.Tool, strings.Join(p.Env, ", "), p.File)
	case toolset.FilesOff:
		return fmt.Sprintf("%s is off: the file tools work only in a directory the command line names: give --files DIR to let the plan read and write the files in DIR, or answer it in a mocks file", p.Tool)
	}
	return p.Error()
}

// importedAdvice says how to call a tool whose binding is in a file the
// plan imports: dir is the directory the plan's imports are read from.
func importedAdvice(p toolset.Problem, dir string) string {
	return fmt.Sprintf("%s; give the file with --tools %s to call it, or answer it in a mocks file", p.Error(), shellQuote(filepath.Join(dir, filepath.FromSlash(p.File))))
}

// toolProblems returns what keeps the tools from running, as advice,
// leaving out the tools nothing implements.
func toolProblems(problems []toolset.Problem) []string {
	var out []string
	for _, p := range problems {
		if !p.Unimplemented() {
			out = append(out, toolAdvice(p))
		}
	}
	return out
}
