package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/obelisk-plan/obelisk/runtime/httptool"
	"github.com/obelisk-plan/obelisk/runtime/permission"
)

// The operator's grants of network and environment access to the tools a
// plan calls: --allow-net, --deny-net, --allow-env and --deny-env. They
// come from the command line of the command that runs the tools, every
// time: resume and apply take them from their own flags, never from the
// journal or a planfile, which a plan's tools may have written.

// grantFlag is one permission flag. Bare (--allow-net) it grants
// everything, if it may; with a list (--allow-net=a,b) the list's
// entries. It may be given more than once; the lists add up.
type grantFlag struct {
	name string
	// bare says whether the flag may be given without a list.
	bare  bool
	all   bool
	list  []string
	check func(string) error
}

// String returns the flag's value as it would be given.
func (g *grantFlag) String() string {
	if g == nil {
		return ""
	}
	if g.all {
		return "true"
	}
	return strings.Join(g.list, ",")
}

// IsBoolFlag lets the flag be given bare; a list needs =.
func (g *grantFlag) IsBoolFlag() bool { return true }

// Set reads a bare flag ("true") or a list.
func (g *grantFlag) Set(v string) error {
	switch v {
	case "true":
		if !g.bare {
			return fmt.Errorf("give a list: --%s=ENTRY,…", g.name)
		}
		g.all = true
		return nil
	case "false":
		return fmt.Errorf("leave --%s out to grant nothing", g.name)
	case "":
		return errors.New("an empty list: give entries after =, or leave the flag out")
	}
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			return fmt.Errorf("an empty entry in %q", v)
		}
		if err := g.check(e); err != nil {
			return err
		}
		g.list = append(g.list, e)
	}
	return nil
}

// grantFlags are the four permission flags.
type grantFlags struct {
	allowNet, denyNet, allowEnv, denyEnv grantFlag
	// policies are the grants, once made: every tool of a command shares
	// them (and the network's connections).
	policies *grants
}

// grants are the policies the flags make.
type grants struct {
	net *permission.Net
	env *permission.Env
}

func (gf *grantFlags) register(fs *flag.FlagSet) {
	gf.allowNet = grantFlag{name: "allow-net", bare: true, check: permission.CheckNetEntry}
	gf.denyNet = grantFlag{name: "deny-net", check: permission.CheckNetEntry}
	gf.allowEnv = grantFlag{name: "allow-env", bare: true, check: permission.CheckEnvEntry}
	gf.denyEnv = grantFlag{name: "deny-env", check: permission.CheckEnvEntry}
	fs.Var(&gf.allowNet, "allow-net", "let tools reach the network: bare, any public host; =HOST,… only those (host, host:port, IP, CIDR, *.domain). Loopback, private and link-local addresses are reached only when named. Off without it")
	fs.Var(&gf.denyNet, "deny-net", "=HOST,…: hosts tools may not reach, whatever --allow-net allows")
	fs.Var(&gf.allowEnv, "allow-env", "let a tools file's ${NAME} read environment variables: bare, all; =NAME,… only those. None without it")
	fs.Var(&gf.denyEnv, "deny-env", "=NAME,…: environment variables ${NAME} may not read, whatever --allow-env grants")
}

// grants returns the policies of the flags.
func (gf *grantFlags) grants() grants {
	if gf.policies == nil {
		g := &grants{}
		// The flags have checked every entry: NewNet and NewEnv cannot
		// fail, and if they did, a nil policy grants nothing.
		g.net, _ = permission.NewNet(permission.NetOptions{AnyPublic: gf.allowNet.all, Allow: gf.allowNet.list, Deny: gf.denyNet.list})
		g.env, _ = permission.NewEnv(permission.EnvOptions{Any: gf.allowEnv.all, Allow: gf.allowEnv.list, Deny: gf.denyEnv.list})
		gf.policies = g
	}
	return *gf.policies
}

// httpOptions returns the options of HTTP tools under the grants.
func (gf *grantFlags) httpOptions() httptool.Options {
	g := gf.grants()
	return httptool.Options{Net: g.net, Env: g.env}
}
