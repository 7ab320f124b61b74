package compiler

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/obelisk-plan/obelisk/toolkit"
)

// MaxImportSize is the largest file a plan may import, in bytes.
const MaxImportSize = 4 << 20

// Import is a file a plan imported, as the checker read it.
type Import struct {
	// Name is the file's slash-separated path relative to Config.Imports.
	Name string
	Text []byte
}

// ImportDir returns the file system a plan's imports are read from when
// they are read from disk: the directory tree at dir (the plan file's
// directory, or the current directory for a plan read from standard
// input). Every file is opened through an os.Root, so no path and no
// symbolic link leads out of the tree, and without blocking, so that a
// FIFO is refused rather than waited on.
func ImportDir(dir string) fs.FS { return importDir(dir) }

type importDir string

func (d importDir) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	root, err := os.OpenRoot(string(d))
	if err != nil {
		return nil, fmt.Errorf("opening the plan's directory: %w", err)
	}
	defer root.Close()
	return root.OpenFile(filepath.FromSlash(name), os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// ReadImport reads the file an import names from fsys, by the rules for
// plans: the path is relative, stays inside fsys's tree and names a .json
// file; the file is a regular file of at most MaxImportSize bytes. It
// returns the cleaned name the file was read under. Its errors say which
// rule a path breaks and never quote the file's content.
func ReadImport(fsys fs.FS, name string) (clean string, text []byte, err error) {
	if fsys == nil {
		return "", nil, errors.New("this checker reads no files: give the checker the file as the operator's tools (compiler.Config.Tools) instead")
	}
	if name == "" {
		return "", nil, errors.New("the path is empty")
	}
	slashed := filepath.ToSlash(name)
	if path.IsAbs(slashed) || filepath.IsAbs(name) || filepath.VolumeName(name) != "" {
		return "", nil, errors.New("the path is absolute: a plan imports only files inside its own directory; give a path relative to the plan, or give the checker the file as the operator's tools (compiler.Config.Tools)")
	}
	clean = path.Clean(slashed)
	if clean == ".." || strings.HasPrefix(clean, "../") || !fs.ValidPath(clean) || !filepath.IsLocal(filepath.FromSlash(clean)) {
		return "", nil, errors.New("the path leads out of the plan's directory: a plan imports only files inside it; give the checker the file as the operator's tools (compiler.Config.Tools) instead")
	}
	if !strings.EqualFold(path.Ext(clean), ".json") {
		return "", nil, errors.New("a plan imports only tools files, whose names end in .json")
	}
	f, err := fsys.Open(clean)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil, fmt.Errorf("there is no file %s in the plan's directory", clean)
		}
		if toolkit.EscapesRoot(err) {
			return "", nil, fmt.Errorf("%s leads out of the plan's directory through a symbolic link: a plan imports only files inside its own directory tree", clean)
		}
		return "", nil, fmt.Errorf("%w; a plan imports only regular files inside its own directory tree", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", nil, err
	}
	if !info.Mode().IsRegular() {
		return "", nil, fmt.Errorf("%s is not a regular file (it is %s)", clean, toolkit.FileKind(info.Mode()))
	}
	if info.Size() > MaxImportSize {
		return "", nil, fmt.Errorf("%s is larger than %d MiB", clean, MaxImportSize>>20)
	}
	text, err = io.ReadAll(io.LimitReader(f, MaxImportSize+1))
	if err != nil {
		return "", nil, fmt.Errorf("reading %s: %w", clean, err)
	}
	if len(text) > MaxImportSize {
		return "", nil, fmt.Errorf("%s is larger than %d MiB", clean, MaxImportSize>>20)
	}
	return clean, text, nil
}
