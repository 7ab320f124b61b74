package main

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolkit/permission"
)

// TestAdvise: the library's errors, which name their settings by Go
// name, are printed with the flags that set them.
func TestAdvise(t *testing.T) {
	net, _ := permission.NewNet(permission.NetOptions{Allow: []string{"api.example.com"}, Deny: []string{"*.internal.example"}})
	env, _ := permission.NewEnv(permission.EnvOptions{Allow: []string{"A"}, Deny: []string{"SECRET"}})
	var off *permission.Net
	_, noModel := llm.Resolve(llm.Settings{BaseURL: "http://localhost:11434/v1"}, func(string) string { return "" })
	for _, tc := range []struct {
		err  error
		want string
	}{
		{off.Allowed(&url.URL{Scheme: "https", Host: "example.com"}), "example.com:443: the network is off: run again with --allow-net=example.com to reach it"},
		{net.Allowed(&url.URL{Scheme: "http", Host: "other.example:8080"}), "other.example:8080 is not in --allow-net: run again with --allow-net=other.example:8080"},
		{net.Allowed(&url.URL{Scheme: "https", Host: "db.internal.example"}), "db.internal.example:443 is denied by --deny-net (*.internal.example)"},
		{env.Check([]string{"B", "C", "SECRET"}), "--allow-env does not grant B, C: run again with --allow-env=B,C; --deny-env denies SECRET"},
		{permission.CheckNetEntry("*"), `"*": leave the list out (bare --allow-net) to allow any public host`},
		{noModel, "a server at http://localhost:11434/v1 needs the name of its model: give --model NAME (or OBELISK_MODEL)"},
	} {
		if got := advise(tc.err.Error()); got != tc.want {
			t.Errorf("advise(%q)\n got %q\nwant %q", tc.err, got, tc.want)
		}
	}
	if s, want := "the plan has 9 steps, more than the limit of 8 (compiler.Limits.MaxSteps)", "the plan has 9 steps, more than the limit of 8 (--max-steps)"; advise(s) != want {
		t.Errorf("advise(%q) = %q", s, advise(s))
	}
	if s := "a plan's own text: (vm.Options.RunTimeout) stays"; advise(s) != "a plan's own text: (--run-timeout) stays" {
		t.Errorf("advise(%q) = %q", s, advise(s))
	}
	if s := "nothing to advise here -- at all"; advise(s) != s {
		t.Errorf("advise(%q) = %q", s, advise(s))
	}
}

// TestAdvicePrinted: what a command prints on stderr names the flag that
// sets a limit, though the library's message names its Go setting.
func TestAdvicePrinted(t *testing.T) {
	dir := writeFiles(t, map[string]string{"p.plan": "tool f(x: int) -> int pure\nf(x: 1) -> †state.r\n  hint researcher\noutput †state.r\n"})
	code, _, stderr := runCLI(t, "check", filepath.Join(dir, "p.plan"))
	if code != exitOK || !strings.Contains(stderr, "the operator declares no hints (--hints), so it routes nothing [routing-hint]") || strings.Contains(stderr, "compiler.Config") {
		t.Errorf("check: exit %d\n%s", code, stderr)
	}
	code, stdout, _ := runCLI(t, "check", "--format", "json", filepath.Join(dir, "p.plan"))
	if code != exitOK || !strings.Contains(stdout, "(compiler.Config.Hints)") {
		t.Errorf("check --format json: exit %d; a program reads the library's names:\n%s", code, stdout)
	}
}
