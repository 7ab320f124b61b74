package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/lang"
)

const importedTools = `{"tools": [{"name": "more", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}}]}`

// checkImport checks a plan that imports name from the directory dir and
// returns the import's diagnostics as text.
func checkImport(t *testing.T, dir, name string) (*Info, string) {
	t.Helper()
	info, diags := checkSource("p.plan", []byte("import "+lang.Quote(name)+"\noutput 1\n"), Config{Imports: ImportDir(dir)})
	return info, string(diagText(diags))
}

// TestImportConfined: a plan imports only regular .json files of at most
// MaxImportSize bytes inside its own directory tree, read from disk.
func TestImportConfined(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.json")
	if err := os.WriteFile(secret, []byte(importedTools), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("tools.json", importedTools)
	write("sub/tools.json", importedTools)
	write("dir.json/x", "")
	symlink := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
	}
	symlink(secret, "out.json")
	symlink("../"+filepath.Base(outside)+"/secret.json", "rel-out.json")
	symlink("/dev/zero", "zero.json")
	symlink("sub/tools.json", "in.json")
	big, err := os.Create(filepath.Join(dir, "big.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(MaxImportSize + 1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	big.Close()

	for _, tc := range []struct{ name, want string }{
		{secret, "the path is absolute"},
		{"/dev/zero", "the path is absolute"},
		{"/dev/stdin", "the path is absolute"},
		{"../" + filepath.Base(outside) + "/secret.json", "the path leads out of the plan's directory"},
		{"sub/../../x.json", "the path leads out of the plan's directory"},
		{"out.json", "leads out of the plan's directory through a symbolic link"},
		{"rel-out.json", "leads out of the plan's directory through a symbolic link"},
		{"zero.json", "leads out of the plan's directory through a symbolic link"},
		{"dir.json", "dir.json is not a regular file (it is a directory)"},
		{"big.json", "big.json is larger than 4 MiB"},
		{"tools.txt", "a plan imports only tools files, whose names end in .json"},
		{"missing.json", "there is no file missing.json in the plan's directory"},
		{"", "the path is empty"},
	} {
		_, got := checkImport(t, dir, tc.name)
		if !strings.Contains(got, "[import-error]") || !strings.Contains(got, tc.want) {
			t.Errorf("import %q: want an import-error saying %q, got:\n%s", tc.name, tc.want, got)
		}
	}
	for _, name := range []string{"tools.json", "sub/tools.json", "./sub/../tools.json", "in.json"} {
		info, got := checkImport(t, dir, name)
		if got != "" || info.Tools["more"] == nil {
			t.Errorf("import %q: want its tools, got:\n%s", name, got)
		}
	}
	info, _ := checkImport(t, dir, "./sub/../tools.json")
	if len(info.Imports) != 1 || info.Imports[0].Name != "tools.json" || string(info.Imports[0].Text) != importedTools {
		t.Errorf("recorded imports: %+v", info.Imports)
	}
	if _, got := checkImport(t, dir, "tools.json"); got != "" {
		t.Fatal(got)
	}
	_, diags := checkSource("p.plan", []byte("import \"tools.json\"\noutput 1\n"), Config{})
	if !strings.Contains(string(diagText(diags)), "this checker reads no files") {
		t.Errorf("no Imports: %s", diagText(diags))
	}
}

// TestImportShowsNoContent: what the checker says of an imported file
// names where a problem is, never what the file holds, whatever its
// content makes the parser or the checker say.
func TestImportShowsNoContent(t *testing.T) {
	const secret = "SECRET-7f3a"
	for _, text := range []string{
		`{"api_key": "` + secret + `"}`,
		`{"name": "` + secret + `"}`,
		`{"name": "x` + secret + `!"}`,
		`[{"name": "t", "inputSchema": {"type": "object", "properties": {"` + secret + `": {"type": "integer", "default": "` + secret + `"}}}}]`,
		`[{"name": "t", "inputSchema": {"type": "` + secret + `"}}]`,
		`{"tools": "` + secret + `"}`,
		`{"tools": [` + secret + `]}`,
		secret,
		`{"tools": [{"name": "t", "inputSchema": {"type": "object"}, "http": {"url": "` + secret + `"}, "annotations": {"effect": "` + secret + `"}}]}`,
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "creds.json"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, diags := checkSource("p.plan", []byte("import \"creds.json\"\nt() -> †state.x\n"), Config{Imports: ImportDir(dir)})
		var all strings.Builder
		for _, d := range diags {
			all.WriteString(d.Message + "\n")
			for _, r := range d.Related {
				all.WriteString(r.Message + "\n")
			}
			if d.Fix != nil {
				all.WriteString(d.Fix.Message + "\n")
			}
			if d.File != "p.plan" {
				t.Errorf("%s: a diagnostic in the imported file: %s", text, d.Message)
			}
		}
		if strings.Contains(all.String(), secret[:6]) || strings.Contains(all.String(), "7f3a") {
			t.Errorf("%s: the diagnostics show the file's content:\n%s", text, all.String())
		}
	}
}
