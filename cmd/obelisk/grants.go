package main

import (
	"flag"

	"github.com/obelisk-plan/obelisk/runtime/httptool"
	"github.com/obelisk-plan/obelisk/runtime/permission"
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
