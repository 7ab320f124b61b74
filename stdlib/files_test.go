package stdlib

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/toolkit"
)

// fileRoot makes a files root inside a directory of its own and returns
// both, so a test can see what appeared beside the root.
func fileRoot(t *testing.T) (base, root string) {
	t.Helper()
	base = t.TempDir()
	root = filepath.Join(base, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	return base, root
}

// entries lists a directory's names.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func callErr(t *testing.T, reg *toolkit.Registry, tool string, args map[string]any) *toolkit.Error {
	t.Helper()
	_, err := reg.Call(context.Background(), tool, args)
	re, ok := err.(*toolkit.Error)
	if !ok {
		t.Fatalf("%s %v: got %v, want a refusal", tool, args, err)
	}
	return re
}

// TestFileWriteRefusesRootPaths: a path that names no file inside the
// root (empty, ".", a path that comes back to the root, a directory, an
// absolute path, one that leaves by "..") is refused, and nothing is
// written, beside the root or in it.
func TestFileWriteRefusesRootPaths(t *testing.T) {
	base, root := fileRoot(t)
	if err := os.Mkdir(filepath.Join(root, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	reg := registry(t, Options{FilesRoot: root})
	for _, tc := range []struct{ path, message string }{
		{"", "the path is empty"},
		{".", `"." names the files root itself`},
		{"./", `"./" names a directory`},
		{"a/..", `"a/.." names the files root itself`},
		{"d", `"d" is a directory`},
		{"d/", `"d/" names a directory`},
		{"/etc/x", `"/etc/x" is absolute`},
		{"../x", `"../x" leaves the files root`},
		{"d/../../x", `"d/../../x" leaves the files root`},
	} {
		for _, tool := range []string{"file.write", "file.read"} {
			args := map[string]any{"path": tc.path, "content": "x"}
			if tool == "file.read" {
				delete(args, "content")
			}
			re := callErr(t, reg, tool, args)
			if re.Code != toolkit.CodeInvalidArguments || !re.NotRetryable || !strings.Contains(re.Message, tc.message) {
				t.Errorf("%s %q: got %+v; want invalid-arguments with %q", tool, tc.path, re, tc.message)
			}
		}
	}
	if got := entries(t, base); !slices.Equal(got, []string{"root"}) {
		t.Errorf("beside the root: %v; want only the root", got)
	}
	if got := entries(t, root); !slices.Equal(got, []string{"d"}) {
		t.Errorf("in the root: %v; want only d", got)
	}
}

// TestFileWritePlantedLinks: a link planted where a predictable temporary
// file would go, or in the target's place, pointing outside the root,
// does not send the content outside it.
func TestFileWritePlantedLinks(t *testing.T) {
	_, root := fileRoot(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, link := range []string{"a.txt.tmp", "b.txt"} {
		if err := os.Symlink(secret, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "new"), filepath.Join(root, "c.txt.tmp")); err != nil {
		t.Fatal(err)
	}
	reg := registry(t, Options{FilesRoot: root})
	for _, p := range []string{"a.txt", "b.txt", "c.txt"} {
		v, err := reg.Call(context.Background(), "file.write", map[string]any{"path": p, "content": "plan text"})
		if err != nil {
			t.Fatalf("write %s: %v", p, err)
		}
		if v.(map[string]any)["bytes"] != int64(9) {
			t.Errorf("write %s: %v", p, v)
		}
		if b, err := os.ReadFile(filepath.Join(root, p)); err != nil || string(b) != "plan text" {
			t.Errorf("%s: %q %v", p, b, err)
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "keep" {
		t.Errorf("the file outside the root was written: %q", b)
	}
	if got := entries(t, outside); !slices.Equal(got, []string{"secret"}) {
		t.Errorf("outside the root: %v; want only the secret", got)
	}
	// b.txt's link was replaced by the file; the planted links stay as
	// they were, and no temporary file is left.
	if fi, err := os.Lstat(filepath.Join(root, "b.txt")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("b.txt: %v %v; want a regular file", fi, err)
	}
	if got := entries(t, root); !slices.Equal(got, []string{"a.txt", "a.txt.tmp", "b.txt", "c.txt", "c.txt.tmp"}) {
		t.Errorf("in the root: %v", got)
	}
}

// TestFileLinks: a relative link that stays inside the root is followed;
// an absolute link, even to a file inside the root, and a link out of
// the root are refused, reading and writing.
func TestFileLinks(t *testing.T) {
	_, root := fileRoot(t)
	outside := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(root, "data"), 0o755))
	must(os.WriteFile(filepath.Join(root, "data", "a.txt"), []byte("inside"), 0o644))
	must(os.WriteFile(filepath.Join(outside, "b.txt"), []byte("outside"), 0o644))
	must(os.Symlink("data", filepath.Join(root, "rel")))
	must(os.Symlink(filepath.Join(root, "data"), filepath.Join(root, "abs")))
	must(os.Symlink(outside, filepath.Join(root, "out")))
	must(os.Symlink("../"+filepath.Base(outside), filepath.Join(root, "up")))
	reg := registry(t, Options{FilesRoot: root})
	ctx := context.Background()
	if v, err := reg.Call(ctx, "file.read", map[string]any{"path": "rel/a.txt"}); err != nil || v != "inside" {
		t.Errorf("read through a link inside the root: %v %v", v, err)
	}
	if _, err := reg.Call(ctx, "file.write", map[string]any{"path": "rel/new/c.txt", "content": "c"}); err != nil {
		t.Errorf("write through a link inside the root: %v", err)
	} else if b, _ := os.ReadFile(filepath.Join(root, "data", "new", "c.txt")); string(b) != "c" {
		t.Errorf("data/new/c.txt: %q", b)
	}
	for _, p := range []string{"abs/a.txt", "out/b.txt", "up/b.txt", "out/x/y.txt"} {
		re := callErr(t, reg, "file.read", map[string]any{"path": p})
		if re.Code != toolkit.CodeInvalidArguments || !strings.Contains(re.Message, "leaves the files root through a link") {
			t.Errorf("read %s: %+v", p, re)
		}
		re = callErr(t, reg, "file.write", map[string]any{"path": p, "content": "x"})
		if re.Code != toolkit.CodeInvalidArguments || !strings.Contains(re.Message, "leaves the files root through a link") {
			t.Errorf("write %s: %+v", p, re)
		}
	}
	if got := entries(t, outside); !slices.Equal(got, []string{"b.txt"}) {
		t.Errorf("outside the root: %v", got)
	}
}

// TestFileReadBounded: a file larger than the bound is refused.
func TestFileReadBounded(t *testing.T) {
	_, root := fileRoot(t)
	if err := os.WriteFile(filepath.Join(root, "big"), make([]byte, 101), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := registry(t, Options{FilesRoot: root, MaxBodyBytes: 100})
	if re := callErr(t, reg, "file.read", map[string]any{"path": "big"}); re.Code != "too-large" || !strings.Contains(re.Message, "larger than 100 bytes") {
		t.Errorf("got %+v", re)
	}
}

// TestFileWriteIdempotent: writing the same content twice leaves the same
// file and the same result, and no temporary file.
func TestFileWriteIdempotent(t *testing.T) {
	_, root := fileRoot(t)
	reg := registry(t, Options{FilesRoot: root})
	args := map[string]any{"path": "deep/er/note.txt", "content": "same"}
	first, err := reg.Call(context.Background(), "file.write", args)
	if err != nil {
		t.Fatal(err)
	}
	second, err := reg.Call(context.Background(), "file.write", args)
	if err != nil || !mapsEqual(first, second) {
		t.Errorf("second write: %v %v; want %v", second, err, first)
	}
	if got := entries(t, filepath.Join(root, "deep", "er")); !slices.Equal(got, []string{"note.txt"}) {
		t.Errorf("deep/er: %v", got)
	}
	long := strings.Repeat("n", 250)
	if _, err := reg.Call(context.Background(), "file.write", map[string]any{"path": long, "content": "x"}); err != nil {
		t.Errorf("a long name: %v", err)
	}
	if re := callErr(t, reg, "file.write", map[string]any{"path": "deep/er/note.txt/x", "content": "x"}); re.Code != toolkit.CodeInvalidArguments || !strings.Contains(re.Message, "is a file, not a directory") {
		t.Errorf("a file as a directory: %+v", re)
	}
}

func mapsEqual(a, b any) bool {
	ma, mb := a.(map[string]any), b.(map[string]any)
	return ma["path"] == mb["path"] && ma["bytes"] == mb["bytes"]
}
