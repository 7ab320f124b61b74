package stdlib

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/obelisk-plan/obelisk/toolkit"
)

// files are the file tools' view of the files root. Every path a plan
// gives is opened through an os.Root, which refuses a path that leaves the
// root, by "..", by an absolute symbolic link or by a relative link that
// points outside it; a relative link that stays inside the root is
// followed. Each call opens the root anew, so a root that is moved or
// removed between calls is not used through a stale handle.
type files struct {
	// dir is the files root, an absolute path.
	dir string
	// max bounds a file read.
	max int64
}

// read is file.read: the text of a regular file under the root.
func (f *files) read(ctx context.Context, args map[string]any) (any, error) {
	path := args["path"].(string)
	name, err := f.name("file.read", path)
	if err != nil {
		return nil, err
	}
	root, err := f.open()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	// Stat first, so that a device or a fifo is refused before it is
	// opened; the open does not block on a fifo that takes its place in
	// between (O_NONBLOCK), and the open file is checked again.
	info, err := root.Stat(name)
	if err != nil {
		return nil, fileError("file.read", path, err)
	}
	if err := regular("file.read", path, info); err != nil {
		return nil, err
	}
	file, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fileError("file.read", path, err)
	}
	defer file.Close()
	if info, err = file.Stat(); err != nil {
		return nil, fmt.Errorf("file.read %q: %w", path, err)
	}
	if err := regular("file.read", path, info); err != nil {
		return nil, err
	}
	if info.Size() > f.max {
		return nil, tooLarge(path, f.max)
	}
	b, err := io.ReadAll(io.LimitReader(file, f.max+1))
	if err != nil {
		return nil, fmt.Errorf("file.read %q: %w", path, err)
	}
	if int64(len(b)) > f.max {
		return nil, tooLarge(path, f.max)
	}
	return string(b), nil
}

// write is file.write: it writes the content to a new file beside the
// target, under a name nobody can guess, and renames it over the target,
// so a reader sees the old content or the new, never a part, and a file
// or link planted under a predictable name is never written through. A
// link in the target's place is replaced, not followed.
func (f *files) write(ctx context.Context, args map[string]any) (any, error) {
	path, content := args["path"].(string), args["content"].(string)
	name, err := f.name("file.write", path)
	if err != nil {
		return nil, err
	}
	root, err := f.open()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	dir := filepath.Dir(name)
	if dir != "." {
		if err := root.MkdirAll(dir, 0o755); errors.Is(err, fs.ErrExist) {
			return nil, invalid("file.write: a part of %q is a file, not a directory", path)
		} else if err != nil {
			return nil, fileError("file.write", path, err)
		}
	}
	if info, err := root.Lstat(name); err == nil && info.IsDir() {
		return nil, invalid("file.write: %q is a directory; give the path of a file in it", path)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fileError("file.write", path, err)
	}
	tmp, err := writeTemp(root, dir, filepath.Base(name), content)
	if err != nil {
		return nil, fileError("file.write", path, err)
	}
	if err := root.Rename(tmp, name); err != nil {
		root.Remove(tmp)
		return nil, fileError("file.write", path, err)
	}
	return map[string]any{"path": path, "bytes": int64(len(content))}, nil
}

// writeTemp writes content to a new file in dir, named after base and a
// random suffix and created exclusively, and returns its name. The file
// is removed when it cannot be written whole.
func writeTemp(root *os.Root, dir, base, content string) (string, error) {
	var b [8]byte
	rand.Read(b[:])
	if len(base) > 100 {
		base = base[:100] // the name stays within the file system's limit
	}
	name := filepath.Join(dir, "."+base+"."+hex.EncodeToString(b[:])+".tmp")
	file, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	_, err = io.WriteString(file, content)
	if err == nil {
		err = file.Sync()
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		root.Remove(name)
		return "", err
	}
	return name, nil
}

// open opens the files root.
func (f *files) open() (*os.Root, error) {
	root, err := os.OpenRoot(f.dir)
	if err != nil {
		return nil, fmt.Errorf("the files root: %w", err)
	}
	return root, nil
}

// name checks a path a plan gives and returns it cleaned, relative to
// the root. It refuses, before touching the file system, a path that is
// empty, absolute, ends in a separator, names the root itself or leaves
// it by "..".
func (f *files) name(tool, path string) (string, error) {
	switch {
	case path == "":
		return "", invalid("%s: the path is empty; give a file's path relative to the files root, such as notes/today.txt", tool)
	case filepath.IsAbs(path) || filepath.VolumeName(path) != "" || strings.HasPrefix(path, "/") || strings.HasPrefix(path, string(filepath.Separator)):
		return "", invalid("%s: %q is absolute; give a path relative to the files root", tool, path)
	case strings.HasSuffix(path, "/") || strings.HasSuffix(path, string(filepath.Separator)):
		return "", invalid("%s: %q names a directory; give the path of a file", tool, path)
	}
	name := filepath.Clean(path)
	switch {
	case name == ".":
		return "", invalid("%s: %q names the files root itself; give the path of a file in it", tool, path)
	case name == ".." || strings.HasPrefix(name, ".."+string(filepath.Separator)):
		return "", invalid("%s: %q leaves the files root", tool, path)
	}
	return name, nil
}

// regular refuses a file that is not a regular file: a directory, a
// device, a fifo or a socket.
func regular(tool, path string, info fs.FileInfo) error {
	switch {
	case info.IsDir():
		return invalid("%s: %q is a directory; give the path of a file in it", tool, path)
	case !info.Mode().IsRegular():
		return invalid("%s: %q is %s, not a regular file", tool, path, toolkit.FileKind(info.Mode()))
	}
	return nil
}

// fileError turns an error of the file system into the tool's error: a
// missing file is not-found, a path that leaves the root through a link
// is invalid-arguments, others are returned as they are.
func fileError(tool, path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &toolkit.Error{Code: "not-found", Message: fmt.Sprintf("%s: no file %q", tool, path), NotRetryable: true}
	case toolkit.EscapesRoot(err):
		return invalid("%s: %q leaves the files root through a link; links must be relative and stay inside the root", tool, path)
	case errors.Is(err, syscall.ENOTDIR):
		return invalid("%s: a part of %q is a file, not a directory", tool, path)
	}
	return fmt.Errorf("%s %q: %w", tool, path, err)
}

func invalid(format string, args ...any) error {
	return &toolkit.Error{Code: toolkit.CodeInvalidArguments, Message: fmt.Sprintf(format, args...), NotRetryable: true}
}

func tooLarge(path string, max int64) error {
	return &toolkit.Error{Code: "too-large", Message: fmt.Sprintf("file.read: %q is larger than %d bytes", path, max), NotRetryable: true}
}
