package compiler

import (
	"regexp"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/lang"
)

// TestDiagnosticsNameSettings: the checker's diagnostics about what the
// operator gives it carry their code and name the setting by its Go name,
// never a command line's flag.
func TestDiagnosticsNameSettings(t *testing.T) {
	flagLike := regexp.MustCompile(`(^|[\s(])--[a-z]`)
	for _, tc := range []struct {
		plan    string
		code    lang.Code
		setting string
	}{
		{"tool provided\nprovided() -> †state.x\n", lang.UnknownTool, "(compiler.Config.Tools)"},
		{"nothing() -> †state.x\n", lang.UnknownTool, "(compiler.Config.Tools)"},
		{"import \"../out.json\"\n", lang.ImportError, "(compiler.Config.Tools)"},
		{"tool f() -> int pure\nf() -> †state.r\n  hint researcher\noutput †state.r\n", lang.RoutingHint, "(compiler.Config.Hints)"},
	} {
		_, diags := checkSource("p.plan", []byte(tc.plan), Config{})
		found := false
		for _, d := range diags {
			if d.Code == tc.code && strings.Contains(d.Message, tc.setting) {
				found = true
			}
			if flagLike.MatchString(d.Message) {
				t.Errorf("%q: %s names a flag", tc.plan, d.Message)
			}
		}
		if !found {
			t.Errorf("%q: no %s naming %s in:\n%s", tc.plan, tc.code, tc.setting, diagText(diags))
		}
	}
	_, diags := checkSource("p.plan", []byte("tool f(x: int) -> int pure\nf(x: 1) -> †state.a\nf(x: 2) -> †state.b\n"), Config{Limits: Limits{MaxSteps: 1}})
	if len(diags) == 0 || diags[0].Code != lang.LimitExceeded || !strings.Contains(diags[0].Message, "more than the limit of 1 (compiler.Limits.MaxSteps)") {
		t.Errorf("over the step limit:\n%s", diagText(diags))
	}
	if _, _, err := ReadImport(nil, "x.json"); err == nil || !strings.Contains(err.Error(), "(compiler.Config.Tools)") || flagLike.MatchString(err.Error()) {
		t.Errorf("ReadImport without files: %v", err)
	}
}
