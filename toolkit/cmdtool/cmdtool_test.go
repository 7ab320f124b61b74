package cmdtool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obelisk-plan/obelisk/toolkit"
)

// TestMain lets the test binary be the program a command tool runs: with
// CMDTOOL_TEST_PROGRAM set, it acts as the program its first argument
// names.
func TestMain(m *testing.M) {
	if os.Getenv("CMDTOOL_TEST_PROGRAM") == "" {
		os.Exit(m.Run())
	}
	switch os.Args[1] {
	case "echo": // the arguments and the working directory
		var args map[string]any
		if err := json.NewDecoder(os.Stdin).Decode(&args); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		wd, _ := os.Getwd()
		json.NewEncoder(os.Stdout).Encode(map[string]any{"args": args, "argv": os.Args[2:], "dir": filepath.Base(wd)})
	case "text":
		io.Copy(io.Discard, os.Stdin)
		fmt.Println("plain words")
	case "fail":
		fmt.Fprintln(os.Stderr, "warming up")
		fmt.Fprintln(os.Stderr, "the score table is missing")
		os.Exit(3)
	case "hang":
		time.Sleep(time.Hour)
	case "flood":
		os.Stdout.Write([]byte(strings.Repeat("x", 5000)))
	}
	os.Exit(0)
}

func newTool(t *testing.T, block string, dir string) *Tool {
	t.Helper()
	t.Setenv("CMDTOOL_TEST_PROGRAM", "1")
	tool, err := New(toolkit.Definition{Name: "score"}, []byte(block), Options{Dir: dir, MaxOutputBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func argv(mode string, extra ...string) string {
	b, _ := json.Marshal(append([]string{os.Args[0], mode}, extra...))
	return string(b)
}

func TestCall(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	tool := newTool(t, `{"argv": `+argv("echo", "--fast")+`, "dir": "work"}`, dir)
	got, err := tool.Call(context.Background(), map[string]any{"n": int64(2), "tags": []any{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"args": map[string]any{"n": int64(2), "tags": []any{"a"}}, "argv": []any{"--fast"}, "dir": "work"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	got, err = newTool(t, `{"argv": `+argv("text")+`}`, dir).Call(context.Background(), map[string]any{})
	if err != nil || got != "plain words" {
		t.Errorf("text program: got %q, %v", got, err)
	}
}

func TestFailures(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, block, code, message string
		retryable                  bool
	}{
		{"exit status", `{"argv": ` + argv("fail") + `}`, "command-failed", "score: " + filepath.Base(os.Args[0]) + " exit status 3: warming up the score table is missing", true},
		{"timeout", `{"argv": ` + argv("hang") + `, "timeout": "50ms"}`, toolkit.CodeTimeout, "did not finish within 50ms", true},
		{"too much output", `{"argv": ` + argv("flood") + `}`, "too-large", "wrote more than 1000 bytes", false},
		{"no program", `{"argv": ["./no-such-program"]}`, "command-failed", "cannot run " + filepath.Join(dir, "no-such-program"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newTool(t, tc.block, dir).Call(context.Background(), map[string]any{})
			var re *toolkit.Error
			if !errors.As(err, &re) {
				t.Fatalf("got %v; want a toolkit.Error", err)
			}
			if re.Code != tc.code || re.NotRetryable == tc.retryable || !strings.Contains(re.Message, tc.message) {
				t.Errorf("got %+v; want code %s, retryable %v, message with %q", re, tc.code, tc.retryable, tc.message)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := newTool(t, `{"argv": `+argv("hang")+`}`, dir).Call(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled call: got %v", err)
	}
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct{ block, want string }{
		{`{"args": ["x"]}`, `unknown key "args" in the command block; known keys: argv, dir, timeout`},
		{`{"argv": []}`, `no "argv"`},
		{`{"argv": ["x"], "timeout": "-1s"}`, `timeout: "-1s" is not a duration`},
		{`{"argv": "x y"}`, `the command block: json: cannot unmarshal`},
	} {
		if _, err := New(toolkit.Definition{Name: "score"}, []byte(tc.block), Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.block, err, tc.want)
		}
	}
}

// TestProgramNotFromPath: a program named by a path (./prog) in a tools
// file given by a relative path runs from the tools file's directory,
// and the run directory is absolute, even when a program of the same name
// is earlier on PATH; the planted one, which would leave a marker file,
// never runs.
func TestProgramNotFromPath(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the programs are shell scripts")
	}
	work := t.TempDir()
	t.Chdir(work)
	planted := filepath.Join(t.TempDir(), "bin")
	marker := filepath.Join(t.TempDir(), "planted-ran")
	script := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script(filepath.Join(planted, "prog"), "touch '"+marker+"'; echo '\"planted\"'")
	script(filepath.Join(work, "prog"), `echo "\"real $(basename "$PWD")\""`)
	script(filepath.Join(work, "tools", "prog"), `echo "\"tools $(basename "$PWD")\""`)
	if err := os.Mkdir(filepath.Join(work, "tools", "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", planted+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, tc := range []struct{ dir, block, want string }{
		{".", `{"argv": ["./prog"]}`, "real " + filepath.Base(work)},
		{"", `{"argv": ["./prog"]}`, "real " + filepath.Base(work)},
		{"tools", `{"argv": ["./prog"], "dir": "run"}`, "tools run"},
		{"tools", `{"argv": ["../prog"]}`, "real tools"},
		{"tools", `{"argv": ["./prog"], "dir": ` + strconv.Quote(filepath.Join(work, "tools", "run")) + `}`, "tools run"},
	} {
		tool, err := New(toolkit.Definition{Name: "p"}, []byte(tc.block), Options{Dir: tc.dir})
		if err != nil {
			t.Fatal(err)
		}
		if !filepath.IsAbs(tool.argv[0]) || !filepath.IsAbs(tool.dir) {
			t.Errorf("dir %q, %s: program %s in %s; want absolute paths", tc.dir, tc.block, tool.argv[0], tool.dir)
		}
		// The directory the process is in when the tool is called does
		// not matter: the paths were fixed when the tool was made.
		t.Chdir(t.TempDir())
		got, err := tool.Call(context.Background(), map[string]any{})
		t.Chdir(work)
		if err != nil || got != tc.want {
			t.Errorf("dir %q, %s: got %v, %v; want %q", tc.dir, tc.block, got, err, tc.want)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the program planted on PATH ran")
	}
}
