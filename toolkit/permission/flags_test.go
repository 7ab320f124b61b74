package permission

import (
	"flag"
	"slices"
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

// TestFlagsArgs: equal grants give equal arguments, whatever the order
// and repeats of their entries; other grants give other arguments.
func TestFlagsArgs(t *testing.T) {
	args := func(given ...string) []string {
		var f Flags
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		f.Register(fs)
		if err := fs.Parse(given); err != nil {
			t.Fatal(err)
		}
		return f.Args()
	}
	a := args("--allow-net=b.test,a.test", "--allow-net=a.test", "--deny-env=X", "--allow-env")
	b := args("--allow-env", "--allow-net=a.test,b.test", "--deny-env=X")
	if want := []string{"--allow-net=a.test,b.test", "--allow-env", "--deny-env=X"}; !slices.Equal(a, want) || !slices.Equal(b, want) {
		t.Errorf("Args: %q and %q, want %q", a, b, want)
	}
	if c := args("--allow-net=a.test"); slices.Equal(c, a) {
		t.Errorf("other grants give the same arguments %q", c)
	}
	if none := args(); len(none) != 0 {
		t.Errorf("no flags: %q", none)
	}
}
