package planfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadInput: the input is the text given, or the file @FILE names,
// or NAME.input.json beside the plan when nothing is given; nothing
// otherwise.
func TestReadInput(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "p.plan")
	other := filepath.Join(dir, "other.plan")
	if err := os.WriteFile(filepath.Join(dir, "p.input.json"), []byte(`{"beside": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "in.json"), []byte(`{"file": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ arg, path, want string }{
		{`{"given": 1}`, plan, `{"given": 1}`},
		{"@" + filepath.Join(dir, "in.json"), plan, `{"file": 1}`},
		{"", plan, `{"beside": 1}`},
		{"", filepath.Join(dir, "p.json"), `{"beside": 1}`},
		{"", other, ""},
		{"", "", ""},
	} {
		b, err := ReadInput(tc.arg, tc.path)
		if err != nil || string(b) != tc.want || (tc.want == "") != (b == nil) {
			t.Errorf("ReadInput(%q, %q) = %q, %v; want %q", tc.arg, tc.path, b, err, tc.want)
		}
	}
	if _, err := ReadInput("@"+filepath.Join(dir, "none.json"), plan); err == nil || !strings.HasPrefix(err.Error(), "reading input: ") {
		t.Errorf("a file that is not there: %v", err)
	}
	if got := Base("a/x.plan") + "|" + Base("a/x.json") + "|" + Base(""); got != "a/x|a/x|" {
		t.Errorf("Base: %s", got)
	}
}
