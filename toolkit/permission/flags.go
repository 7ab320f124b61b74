package permission

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
)

// The operator's grants of network and environment access to the tools a
// plan calls, as command-line flags: --allow-net, --deny-net, --allow-env
// and --deny-env. They come from the command line of the command that
// runs the tools, every time: never from a journal, a planfile or a
// workflow's input, which a plan's tools may have written.

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

// Flags are the four permission flags. Register adds them to a flag set;
// Policies makes their grants.
type Flags struct {
	allowNet, denyNet, allowEnv, denyEnv grantFlag
	// net and env are the grants, once made: every tool of a command
	// shares them (and the network's connections).
	net *Net
	env *Env
}

// Register adds the flags to fs.
func (gf *Flags) Register(fs *flag.FlagSet) {
	gf.allowNet = grantFlag{name: "allow-net", bare: true, check: CheckNetEntry}
	gf.denyNet = grantFlag{name: "deny-net", check: CheckNetEntry}
	gf.allowEnv = grantFlag{name: "allow-env", bare: true, check: CheckEnvEntry}
	gf.denyEnv = grantFlag{name: "deny-env", check: CheckEnvEntry}
	fs.Var(&gf.allowNet, "allow-net", "let tools reach the network: bare, any public host; =HOST,… only those (host, host:port, IP, CIDR, *.domain). Loopback, private and link-local addresses are reached only when named. Off without it")
	fs.Var(&gf.denyNet, "deny-net", "=HOST,…: hosts tools may not reach, whatever --allow-net allows")
	fs.Var(&gf.allowEnv, "allow-env", "let a tools file's ${NAME} read environment variables: bare, all; =NAME,… only those. None without it")
	fs.Var(&gf.denyEnv, "deny-env", "=NAME,…: environment variables ${NAME} may not read, whatever --allow-env grants")
}

// Policies returns the grants of the flags: the network and the
// environment the tools may use. Every call returns the same policies.
func (gf *Flags) Policies() (*Net, *Env) {
	if gf.net == nil {
		// The flags have checked every entry: NewNet and NewEnv cannot
		// fail, and if they did, a nil policy grants nothing.
		gf.net, _ = NewNet(NetOptions{AnyPublic: gf.allowNet.all, Allow: gf.allowNet.list, Deny: gf.denyNet.list})
		gf.env, _ = NewEnv(EnvOptions{Any: gf.allowEnv.all, Allow: gf.allowEnv.list, Deny: gf.denyEnv.list})
	}
	return gf.net, gf.env
}

// Args returns the grants of the flags as flags, each list sorted and
// without repeats: equal grants give equal arguments, whatever the order
// they were given in. A program records them, or a fingerprint of them,
// to tell runs made under other grants from its own.
func (gf *Flags) Args() []string {
	var args []string
	for _, g := range []*grantFlag{&gf.allowNet, &gf.denyNet, &gf.allowEnv, &gf.denyEnv} {
		if g.all {
			args = append(args, "--"+g.name)
		}
		if len(g.list) > 0 {
			list := slices.Clone(g.list)
			slices.Sort(list)
			args = append(args, "--"+g.name+"="+strings.Join(slices.Compact(list), ","))
		}
	}
	return args
}
