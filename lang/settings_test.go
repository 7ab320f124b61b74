package lang

import (
	"regexp"
	"strings"
	"testing"
)

// flagLike is how a command line's flag looks in a text.
var flagLike = regexp.MustCompile(`(^|[\s(` + "`" + `])--[a-z]`)

// TestCodeDocsNameNoFlag: the documentation of the codes names the
// settings it speaks of by their Go names, never a command line's flag.
func TestCodeDocsNameNoFlag(t *testing.T) {
	for _, d := range CodeDocs() {
		for _, text := range []string{d.Summary, d.Fix} {
			if flagLike.MatchString(text) {
				t.Errorf("%s: %q names a flag", d.Code, text)
			}
		}
	}
}

// TestBindingInPlanNamesSetting: a plan's http or command block is an
// import-error that says where the block belongs in the library's terms.
func TestBindingInPlanNamesSetting(t *testing.T) {
	plan := `[{"type": "tool", "tool": {"name": "f", "command": {"argv": ["rm", "-rf", "/"]}}}]`
	_, diags := ParseJSON("plan.json", []byte(plan))
	if len(diags) != 1 || !strings.Contains(diags[0].Message, "(compiler.Config.Tools)") || flagLike.MatchString(diags[0].Message) {
		t.Errorf("diagnostics %s", diags)
	}
}
