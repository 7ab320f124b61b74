package main

import (
	"bytes"
	"context"
	"flag"
	"github.com/obelisk-plan/obelisk/internal/cli"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the want/ sections of testdata/script/*.txtar instead of comparing with them")

// TestScripts runs the command line on the cases in testdata/script. Each
// case is a txtar archive: its comment says what the case shows and holds
// the command (the line that starts with "obelisk "), its files are written
// to an empty directory the command runs in (a file named stdin is its
// standard input), and its want/stdout, want/stderr and want/exit sections
// are what the command must print and return; want/file/NAME is what the
// file NAME must hold afterwards. $EXAMPLES in the command is the examples
// directory. In the output, $EXAMPLES stands for that directory again, and
// log timestamps are dropped; with a "normalize: durations" line in the
// comment, every duration is printed as <dur>. go test -update rewrites the
// want/ sections from what the command does.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/script/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		file, err := filepath.Abs(file) // the command runs in another directory
		if err != nil {
			t.Fatal(err)
		}
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			runScript(t, file, ar, examples)
		})
	}
}

var (
	logTime  = regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT[0-9:.]+Z `)
	duration = regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|ms|s|m|h)\b`)
)

func runScript(t *testing.T, file string, ar *txtar.Archive, examples string) {
	var cmdLine string
	found, normalize := false, false
	for _, line := range strings.Split(string(ar.Comment), "\n") {
		switch {
		case line == "obelisk" || strings.HasPrefix(line, "obelisk "):
			cmdLine, found = strings.TrimPrefix(line, "obelisk"), true
		case strings.TrimSpace(line) == "normalize: durations":
			normalize = true
		}
	}
	if !found {
		t.Fatal("the comment has no line starting with \"obelisk \"")
	}
	dir := t.TempDir()
	var stdin []byte
	want := map[string]string{}
	for _, f := range ar.Files {
		switch {
		case strings.HasPrefix(f.Name, "want/"):
			want[strings.TrimPrefix(f.Name, "want/")] = string(f.Data)
		case f.Name == "stdin":
			stdin = f.Data
		default:
			path := filepath.Join(dir, filepath.FromSlash(f.Name))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, f.Data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	args, err := splitArgs(strings.ReplaceAll(cmdLine, "$EXAMPLES", examples))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &env{Env: cli.Env{Stdin: bytes.NewReader(stdin), Stdout: &stdout, Stderr: &stderr}})
	clean := func(b []byte) string {
		s := strings.ReplaceAll(string(b), examples, "$EXAMPLES")
		s = logTime.ReplaceAllString(s, "")
		if normalize {
			s = duration.ReplaceAllString(s, "<dur>")
		}
		return s
	}
	got := map[string]string{
		"stdout": clean(stdout.Bytes()),
		"stderr": clean(stderr.Bytes()),
		"exit":   strconv.Itoa(code) + "\n",
	}
	for name := range want {
		if rest, ok := strings.CutPrefix(name, "file/"); ok {
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rest)))
			if err != nil {
				got[name] = "(missing: " + err.Error() + ")\n"
				continue
			}
			got[name] = string(b)
		}
	}
	if *update {
		writeWant(t, file, ar, got)
		return
	}
	for _, name := range []string{"stdout", "stderr", "exit"} {
		if _, ok := want[name]; !ok {
			want[name] = ""
			if name == "exit" {
				want[name] = "0\n"
			}
		}
	}
	for name, w := range want {
		if diff := cmp.Diff(w, got[name]); diff != "" {
			t.Errorf("obelisk %s: %s (-want +got):\n%s", cmdLine, name, diff)
		}
	}
}

// writeWant rewrites the archive's want/ sections with what the command
// did; empty outputs and exit 0 are left out.
func writeWant(t *testing.T, file string, ar *txtar.Archive, got map[string]string) {
	var files []txtar.File
	for _, f := range ar.Files {
		if !strings.HasPrefix(f.Name, "want/") {
			files = append(files, f)
		}
	}
	for _, name := range []string{"stdout", "stderr", "exit"} {
		if got[name] == "" || name == "exit" && got[name] == "0\n" {
			continue
		}
		files = append(files, txtar.File{Name: "want/" + name, Data: []byte(got[name])})
	}
	for _, f := range ar.Files {
		if strings.HasPrefix(f.Name, "want/file/") {
			files = append(files, txtar.File{Name: f.Name, Data: []byte(got[strings.TrimPrefix(f.Name, "want/")])})
		}
	}
	ar.Files = files
	if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
		t.Fatal(err)
	}
}

// splitArgs splits a command line at spaces; single or double quotes keep
// a field together.
func splitArgs(s string) ([]string, error) {
	var args []string
	var cur strings.Builder
	inField := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inField = r, true
		case r == ' ' || r == '\t':
			if inField {
				args = append(args, cur.String())
				cur.Reset()
				inField = false
			}
		default:
			cur.WriteRune(r)
			inField = true
		}
	}
	if quote != 0 {
		return nil, strconv.ErrSyntax
	}
	if inField {
		args = append(args, cur.String())
	}
	return args, nil
}
