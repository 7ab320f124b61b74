package stdlib

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obelisk-plan/obelisk/toolkit"
)

func registry(t *testing.T, opts Options) *toolkit.Registry {
	t.Helper()
	reg := toolkit.NewRegistry()
	if err := Register(reg, opts); err != nil {
		t.Fatal(err)
	}
	return reg
}

func code(err error) string {
	var re *toolkit.Error
	if errors.As(err, &re) {
		return re.Code
	}
	return ""
}

func TestEchoAndValidation(t *testing.T) {
	reg := registry(t, Options{})
	v, err := reg.Call(context.Background(), "echo", map[string]any{"value": []any{int64(1), "a"}})
	if err != nil || !cmp.Equal(v, []any{int64(1), "a"}) {
		t.Errorf("echo: %v %v", v, err)
	}
	_, err = reg.Call(context.Background(), "echo", map[string]any{})
	if code(err) != toolkit.CodeInvalidArguments || !strings.Contains(err.Error(), "value") {
		t.Errorf("missing argument: %v", err)
	}
}

func TestSleep(t *testing.T) {
	reg := registry(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := reg.Call(ctx, "sleep", map[string]any{"duration": "1h"})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Errorf("sleep did not stop at the deadline: %v", err)
	}
	if _, err := reg.Call(context.Background(), "sleep", map[string]any{"duration": "soon"}); code(err) != toolkit.CodeInvalidArguments {
		t.Errorf("bad duration: %v", err)
	}
}

func TestSelect(t *testing.T) {
	doc := map[string]any{"items": []any{map[string]any{"name": "a", "tags": []any{"x", "y"}}}, "a b": int64(2)}
	cases := []struct {
		path string
		want any
		err  string
	}{
		{"$.items[0].name", "a", ""},
		{"items[0].tags[-1]", "y", ""},
		{`["a b"]`, int64(2), ""},
		{"items[3]", nil, "out of range"},
		{"items.name", nil, "not an object"},
		{"missing", nil, "no field missing"},
	}
	for _, c := range cases {
		got, err := Select(doc, c.path)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.path, err, c.err)
			}
			continue
		}
		if err != nil || !cmp.Equal(got, c.want) {
			t.Errorf("%s: %v %v, want %v", c.path, got, err, c.want)
		}
	}
}

func TestFormat(t *testing.T) {
	reg := registry(t, Options{})
	v, err := reg.Call(context.Background(), "text.format", map[string]any{
		"template": "Dear {{.name}}: {{range .items}}[{{.}}]{{end}}",
		"values":   map[string]any{"name": "Ada", "items": []any{"a", "b"}},
	})
	if err != nil || v != "Dear Ada: [a][b]" {
		t.Errorf("%v %v", v, err)
	}
	_, err = reg.Call(context.Background(), "text.format", map[string]any{"template": "{{.missing}}", "values": map[string]any{}})
	if code(err) != toolkit.CodeInvalidArguments {
		t.Errorf("missing key: %v", err)
	}
}

func TestFilesConfined(t *testing.T) {
	if reg := registry(t, Options{}); reg.Has("file.read") {
		t.Fatal("file tools registered without a root")
	}
	root := t.TempDir()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644)
	os.Symlink(outside, filepath.Join(root, "link"))
	reg := registry(t, Options{FilesRoot: root})
	ctx := context.Background()
	v, err := reg.Call(ctx, "file.write", map[string]any{"path": "notes/a.txt", "content": "hello"})
	if err != nil || v.(map[string]any)["bytes"] != int64(5) {
		t.Fatalf("write: %v %v", v, err)
	}
	if v, err := reg.Call(ctx, "file.read", map[string]any{"path": "notes/a.txt"}); err != nil || v != "hello" {
		t.Errorf("read: %v %v", v, err)
	}
	for _, p := range []string{"../x", "/etc/passwd", "link/secret", "link/new/dir/file"} {
		if _, err := reg.Call(ctx, "file.read", map[string]any{"path": p}); code(err) != toolkit.CodeInvalidArguments {
			t.Errorf("read %s: %v", p, err)
		}
		if _, err := reg.Call(ctx, "file.write", map[string]any{"path": p, "content": "x"}); code(err) != toolkit.CodeInvalidArguments {
			t.Errorf("write %s: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
		t.Error("a write escaped the root through the link")
	}
	if _, err := reg.Call(ctx, "file.read", map[string]any{"path": "none.txt"}); code(err) != "not-found" {
		t.Errorf("missing file: %v", err)
	}
}

// TestDefinitions: the definitions of the built-in tools are those a
// registry holds with a files root, the file tools' included, whatever
// the options.
func TestDefinitions(t *testing.T) {
	reg := toolkit.NewRegistry()
	if err := Register(reg, Options{FilesRoot: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(reg.Definitions(), Definitions()); diff != "" {
		t.Errorf("Definitions (-registered +given):\n%s", diff)
	}
}
