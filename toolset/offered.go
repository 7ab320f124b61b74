package toolset

import (
	"fmt"
	"strings"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// Offered returns the tools a goal offers its model of the tools files a
// source records (Files): the tools of the files named toolFiles, then
// the MCP servers' tools, each once (OfferedOnce). The built-in tools are
// not among them (see OfferedBuiltins).
func Offered(files []planfile.File, toolFiles []string) []*lang.ToolDecl {
	var out []*lang.ToolDecl
	for _, name := range toolFiles {
		for _, f := range files {
			if f.Name == name {
				decls, _ := lang.ParseTools(f.Name, []byte(f.Text))
				out = append(out, decls...)
			}
		}
	}
	var mcpDecls []*lang.ToolDecl
	for _, f := range files {
		if strings.HasPrefix(f.Name, "<") && f.Name != BuiltinsName { // an MCP server's
			decls, _ := lang.ParseTools(f.Name, []byte(f.Text))
			mcpDecls = append(mcpDecls, decls...)
		}
	}
	return append(out, OfferedOnce(mcpDecls)...)
}

// OfferedBuiltins returns the built-in tools a goal may offer its model:
// all but the file tools.
func (s *Set) OfferedBuiltins() []*lang.ToolDecl {
	var out []*lang.ToolDecl
	for _, d := range s.builtinDecls {
		if !strings.HasPrefix(d.Name.Name, "file.") {
			out = append(out, d)
		}
	}
	return out
}

// CallerOf returns the tools of a run that may call offered (a goal's
// model is offered them): the tools the set holds, the mocks in front
// (Caller). Tools files whose bindings do not hold are an error (the
// diagnostics, see BindDiagnostics), and so is a tool offered that has no
// implementation, which names those without one.
func (s *Set) CallerOf(offered []*lang.ToolDecl) (toolkit.Chain, error) {
	if diags := s.BindDiagnostics(); diags.HasErrors() {
		return toolkit.Chain{}, diags
	}
	chain, err := s.Caller()
	if err != nil {
		return toolkit.Chain{}, err
	}
	var missing []string
	for _, t := range offered {
		if !s.Has(t.Name.Name) {
			missing = append(missing, t.Name.Name)
		}
	}
	if len(missing) > 0 {
		return toolkit.Chain{}, fmt.Errorf("no implementation for %s: answer them in a mocks file (toolset.Config.Mocks)", strings.Join(missing, ", "))
	}
	return chain, nil
}
