package main

import (
	"encoding/json"

	"github.com/obelisk-plan/obelisk/toolset"
)

// grantsRecord describes what a server's tools may reach besides their
// definitions, for the fingerprint of its runs' origin: the permission
// grants, and the tool settings (the MCP servers and their bounds, the
// file tools' directory, command tools, mocks) as a run records them.
func grantsRecord(set *toolset.Set, tools json.RawMessage) string {
	b, _ := json.Marshal(struct {
		Permissions []string        `json:"permissions"`
		Tools       json.RawMessage `json:"tools"`
	}{set.Grants(), tools})
	return string(b)
}
