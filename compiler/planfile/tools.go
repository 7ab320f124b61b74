package planfile

import (
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// ToolsFile makes a tools file named name of definitions (an MCP server's
// tools, say): the file a source records in its Tools, and the
// declarations the checker takes from it, with the diagnostics of what
// Obelisk cannot read in it (a schema that is no JSON Schema object).
func ToolsFile(name string, defs []toolkit.Definition) (File, []*lang.ToolDecl, lang.Diagnostics) {
	b := toolkit.ToolsJSON(defs)
	decls, diags := lang.ParseTools(name, b)
	return File{Name: name, Text: string(b)}, decls, diags
}

// Definition returns the definition of a tool a tools file declares, as
// a registry takes it: its name, its description and its schemas.
func Definition(d *lang.ToolDecl) toolkit.Definition {
	return toolkit.Definition{Name: d.Name.Name, Description: d.Doc(), InputSchema: d.InputSchema, OutputSchema: d.OutputSchema}
}
