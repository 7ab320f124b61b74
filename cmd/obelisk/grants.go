package main

import (
	"encoding/json"
	"flag"

	"github.com/obelisk-plan/obelisk/toolkit/httptool"
	"github.com/obelisk-plan/obelisk/toolkit/permission"
)

// grantFlags are the operator's grants of network and environment access
// to the tools a plan calls (permission.Flags).
type grantFlags struct {
	flags permission.Flags
}

// grants are the policies the flags make.
type grants struct {
	net *permission.Net
	env *permission.Env
}

func (gf *grantFlags) register(fs *flag.FlagSet) { gf.flags.Register(fs) }

// grants returns the policies of the flags.
func (gf *grantFlags) grants() grants {
	net, env := gf.flags.Policies()
	return grants{net: net, env: env}
}

// httpOptions returns the options of HTTP tools under the grants.
func (gf *grantFlags) httpOptions() httptool.Options {
	g := gf.grants()
	return httptool.Options{Net: g.net, Env: g.env}
}

// grantsRecord describes what a server's tools may reach besides their
// definitions, for the fingerprint of its runs' origin: the permission
// grants, and the tool settings (the MCP servers and their bounds, the
// file tools' directory, command tools, mocks) as a run records them.
func (rf *runFlags) grantsRecord(tools json.RawMessage) string {
	b, _ := json.Marshal(struct {
		Permissions []string        `json:"permissions"`
		Tools       json.RawMessage `json:"tools"`
	}{rf.grants.flags.Args(), tools})
	return string(b)
}
