//go:build unix

package stdlib

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/obelisk-plan/obelisk/toolkit"
)

// TestFileReadSpecial: a named pipe in the root is refused without
// blocking the call (nobody ever writes to it), and so is a directory.
func TestFileReadSpecial(t *testing.T) {
	_, root := fileRoot(t)
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.Symlink("pipe", filepath.Join(root, "to-pipe")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	reg := registry(t, Options{FilesRoot: root})
	for _, tc := range []struct{ path, message string }{
		{"pipe", `"pipe" is a named pipe, not a regular file`},
		{"to-pipe", `"to-pipe" is a named pipe, not a regular file`},
		{"d", `"d" is a directory`},
	} {
		re := callErr(t, reg, "file.read", map[string]any{"path": tc.path})
		if re.Code != toolkit.CodeInvalidArguments || !strings.Contains(re.Message, tc.message) {
			t.Errorf("read %s: %+v; want invalid-arguments with %q", tc.path, re, tc.message)
		}
	}
}
