package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestCommandToolNotFromPath: a tools file given by a relative path
// (--tools tools.json) has a command tool that names ./prog; the program
// beside the tools file runs, not a program of the same name planted earlier on
// PATH (which would leave a marker file).
func TestCommandToolNotFromPath(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the programs are shell scripts")
	}
	work := t.TempDir()
	planted := t.TempDir()
	marker := filepath.Join(t.TempDir(), "planted-ran")
	for path, text := range map[string]string{
		filepath.Join(planted, "prog"): "#!/bin/sh\ntouch '" + marker + "'\necho '{\"who\": \"planted\"}'\n",
		filepath.Join(work, "prog"):    "#!/bin/sh\ncat >/dev/null\necho '{\"who\": \"beside the tools file\"}'\n",
		filepath.Join(work, "tools.json"): `[{"name": "who", "inputSchema": {"type": "object", "properties": {}},
  "outputSchema": {"type": "object", "properties": {"who": {"type": "string"}}}, "annotations": {"readOnlyHint": true},
  "command": {"argv": ["./prog"]}}]`,
		filepath.Join(work, "p.plan"): "import \"tools.json\"\nwho() -> †state.w\noutput †state.w.who\n",
	} {
		if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", planted+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Chdir(work)
	code, stdout, stderr := runCLI(t, "run", "--no-journal", "--allow-commands", "--tools", "tools.json", "p.plan")
	if code != exitOK || strings.TrimSpace(stdout) != `"beside the tools file"` {
		t.Errorf("run: exit %d, output %s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the program planted on PATH ran")
	}
}
