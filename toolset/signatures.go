package toolset

import (
	"slices"
	"strings"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/stdlib"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// Decls returns the signatures of every tool a plan may call, as the
// checker reads them (compiler.Config.Tools): the tools files', the MCP
// servers' and the built-in tools', in that order.
func (s *Set) Decls() []*lang.ToolDecl {
	out := slices.Clone(s.fileDecls)
	out = append(out, s.mcpDecls...)
	return append(out, s.builtinDecls...)
}

// Builtins returns the signatures of the built-in tools, the file tools'
// included whether or not they run.
func (s *Set) Builtins() []*lang.ToolDecl { return slices.Clone(s.builtinDecls) }

// OfferedOnce leaves out the long name (SERVER.TOOL) of an MCP tool that
// is also offered by its bare name, so that a model sees each tool once.
func OfferedOnce(decls []*lang.ToolDecl) []*lang.ToolDecl {
	names := make(map[string]bool, len(decls))
	for _, d := range decls {
		names[d.Name.Name] = true
	}
	out := decls[:0:0]
	for _, d := range decls {
		if _, bare, ok := strings.Cut(d.Name.Name, "."); ok && names[bare] {
			continue
		}
		out = append(out, d)
	}
	return out
}

// Files returns the tools files, then the MCP servers' tools (one file a
// server, named <SERVER>), then the built-in tools' definitions (named
// BuiltinsName): the tools files a source records, to build its program
// again.
func (s *Set) Files() []planfile.File { return slices.Clone(s.files) }

// MCPFiles returns the MCP servers' tools as tools files, one a server,
// named <SERVER>.
func (s *Set) MCPFiles() []planfile.File { return s.mcpFiles }

// Sources returns the tools files' texts by name, for diagnostics.
func (s *Set) Sources() lang.Sources {
	out := lang.Sources{}
	for _, f := range s.cfg.Tools {
		out[f.Name] = []byte(f.Text)
	}
	return out
}

// Diagnostics returns what is wrong in the tools files' definitions.
func (s *Set) Diagnostics() lang.Diagnostics { return slices.Clone(s.readDiags) }

// BindDiagnostics returns what is wrong in the tools files' http and
// command blocks: the tools they name are not bound.
func (s *Set) BindDiagnostics() lang.Diagnostics { return slices.Clone(s.bindDiags) }

// MCPTools returns the tools of the MCP server named server, by the names
// a plan calls them by, and whether the set started such a server.
func (s *Set) MCPTools(server string) ([]string, bool) {
	var out []string
	found := false
	for _, srv := range s.servers {
		found = found || srv.Name() == server
	}
	for _, b := range s.bindings {
		if b.Server.Name() == server {
			out = append(out, b.Definition.Name)
		}
	}
	return out, found
}

// CallableBuiltins returns the definitions of the built-in tools that can
// run here, as a tools file: the file tools only with a files root, the
// network's only when the grants let them reach a host.
func (s *Set) CallableBuiltins() []byte {
	var defs []toolkit.Definition
	for _, d := range s.builtinDefs {
		if s.reg.Has(d.Name) && !(s.net.Off() && stdlib.NeedsNetwork(d.Name)) {
			defs = append(defs, d)
		}
	}
	return toolkit.ToolsJSON(defs)
}
