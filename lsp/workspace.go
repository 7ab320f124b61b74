package lsp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WorkspaceFile is the name of the file, at the root of a workspace, that
// names the operator's tools for the language server.
const WorkspaceFile = "obelisk.json"

// Workspace is what a workspace file says: the tools files, MCP servers
// and hints file the plans of the workspace are checked with, as the
// flags of `obelisk check` give them. It names what is on the operator's
// disk; a plan's text grants nothing.
type Workspace struct {
	// Tools are tools files, by paths relative to the workspace file.
	Tools []string `json:"tools,omitempty"`
	// MCP are MCP servers as --mcp gives them: 'NAME=COMMAND [ARGS...]'.
	// Starting them runs programs, so a server starts them only when
	// its operator allows it (obelisk lsp --workspace-mcp).
	MCP []string `json:"mcp,omitempty"`
	// Hints is a hints file, by its path relative to the workspace file.
	Hints string `json:"hints,omitempty"`
	// Strict reports an irreversible call without an approval gate as an
	// error.
	Strict bool `json:"strict,omitempty"`
}

// ReadWorkspace reads the workspace file of dir. It returns nil and no
// error when dir has none. The paths it returns are joined to dir; a
// path that leaves dir is an error.
func ReadWorkspace(dir string) (*Workspace, error) {
	name := filepath.Join(dir, WorkspaceFile)
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the workspace file: %w", err)
	}
	var w Workspace
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&w); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	local := func(p string) (string, error) {
		if !filepath.IsLocal(filepath.FromSlash(p)) {
			return "", fmt.Errorf("%s: %q is not a path inside %s", name, p, dir)
		}
		return filepath.Join(dir, filepath.FromSlash(p)), nil
	}
	for i, t := range w.Tools {
		if w.Tools[i], err = local(t); err != nil {
			return nil, err
		}
	}
	if w.Hints != "" {
		if w.Hints, err = local(w.Hints); err != nil {
			return nil, err
		}
	}
	return &w, nil
}
