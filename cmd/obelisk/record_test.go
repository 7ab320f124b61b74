package main

import (
	"encoding/json"
	"testing"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/vm"
)

// TestToolSettingsRecord: a run records its tools as it did before they
// were a toolset.Config, field for field (a server's runs are told apart
// by a fingerprint of the record), without the tools files, which its
// source holds, nor the grants, which are the resuming command's; and a
// record journaled before reads back.
func TestToolSettingsRecord(t *testing.T) {
	const old = `{"mocks":"{}","mocksFile":"m.json","files":"/data","mcp":["calc=calc serve"],"mcpParallel":["calc=2"],"allowCommands":true}`
	var ts toolSettings
	if err := json.Unmarshal([]byte(old), &ts); err != nil {
		t.Fatal(err)
	}
	if ts.Mocks != "{}" || ts.MocksFile != "m.json" || ts.Files != "/data" || len(ts.MCP) != 1 || len(ts.MCPParallel) != 1 || !ts.AllowCommands {
		t.Errorf("the old record read as %+v", ts)
	}
	ts.Tools = []planfile.File{{Name: "tools.json", Text: "{}"}}
	ts.Grants = []string{"--allow-net"}
	set, err := ts.record(vm.Options{}, durable.ApprovalPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	if string(set.Caller) != old {
		t.Errorf("recorded\n %s\nwant\n %s", set.Caller, old)
	}
}
