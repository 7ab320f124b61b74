package toolset

import (
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/toolkit/permission"
)

// Flags are the command-line flags that name the operator's tools: the
// tools files (--tools), the MCP servers (--mcp) and their bounds
// (--mcp-parallel), the grants (--allow-net, --deny-net, --allow-env,
// --deny-env), and, for the commands that run tools, the files root
// (--files) and command tools (--allow-commands). Config makes a Config of
// them.
type Flags struct {
	// Tools, MCP and MCPParallel are the repeated flags' values.
	Tools, MCP, MCPParallel []string
	// Files and AllowCommands are --files and --allow-commands.
	Files         string
	AllowCommands bool
	// Grants are the permission flags.
	Grants permission.Flags
}

// MCPParallelUsage is the help of --mcp-parallel.
const MCPParallelUsage = "NAME=N: at most N calls at once to the MCP server NAME, reads and writes, the others waiting their turn " +
	"(default: reads at once, and one write at a time: a call of a tool whose annotations do not say readOnlyHint waits for the server's other writes); may be repeated"

// RegisterSignatures adds the flags that say which tools a plan may call
// and what they may reach: --tools, --mcp, --mcp-parallel and the grants.
func (f *Flags) RegisterSignatures(fs *flag.FlagSet) {
	fs.Var((*list)(&f.Tools), "tools", "a tools file (MCP tools/list or OpenAI functions JSON, where a tool may have an http or command block saying how it is called) whose tools the plan may call; may be repeated")
	fs.Var((*list)(&f.MCP), "mcp", "an MCP server whose tools the plan may call, as TOOL or NAME.TOOL: 'NAME=COMMAND [ARGS...]', started on stdio; may be repeated")
	fs.Var((*list)(&f.MCPParallel), "mcp-parallel", MCPParallelUsage)
	f.Grants.Register(fs)
}

// RegisterRun adds the flags that let tools run: --files and
// --allow-commands.
func (f *Flags) RegisterRun(fs *flag.FlagSet) {
	fs.StringVar(&f.Files, "files", "", "a directory the built-in file.read and file.write tools may use (they are off without it)")
	fs.BoolVar(&f.AllowCommands, "allow-commands", false, "let command tools (a command block in a tools file) run their programs; they are off without it")
}

// Register adds every flag: RegisterSignatures's and RegisterRun's.
func (f *Flags) Register(fs *flag.FlagSet) {
	f.RegisterSignatures(fs)
	f.RegisterRun(fs)
}

// Config returns the configuration the flags give: the tools files by
// name (Open reads them), the files root made absolute.
func (f *Flags) Config() (Config, error) {
	c := Config{MCP: slices.Clone(f.MCP), MCPParallel: slices.Clone(f.MCPParallel), AllowCommands: f.AllowCommands, Grants: f.Grants.Args()}
	for _, name := range f.Tools {
		c.Tools = append(c.Tools, planfile.File{Name: name})
	}
	if f.Files != "" {
		abs, err := filepath.Abs(f.Files)
		if err != nil {
			return Config{}, fmt.Errorf("the files root: %w", err)
		}
		c.Files = abs
	}
	return c, nil
}

// list is a flag that may be repeated.
type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }
