package permission

import (
	"flag"
	"testing"
)

// TestFlags: the flags grant what they list, a deny beats an allow, and
// nothing is granted without them.
func TestFlags(t *testing.T) {
	var f Flags
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f.Register(fs)
	if err := fs.Parse([]string{"--allow-net=example.com,*.test", "--deny-net=bad.test", "--allow-env=A"}); err != nil {
		t.Fatal(err)
	}
	net, env := f.Policies()
	if net.Off() {
		t.Error("the network is off with --allow-net")
	}
	if !env.Granted("A") || env.Granted("B") {
		t.Error("--allow-env=A should grant A alone")
	}
	var none Flags
	fs = flag.NewFlagSet("y", flag.ContinueOnError)
	none.Register(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if net, env := none.Policies(); !net.Off() || env.Granted("A") {
		t.Error("no flags should grant nothing")
	}
	fs = flag.NewFlagSet("z", flag.ContinueOnError)
	var bad Flags
	bad.Register(fs)
	if err := fs.Parse([]string{"--deny-net"}); err == nil {
		t.Error("a bare --deny-net should be refused")
	}
}
