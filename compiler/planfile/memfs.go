package planfile

import (
	"io/fs"
	"path"
	"strings"
	"time"
)

// memFS serves the files a source recorded, by name, as regular files.
type memFS map[string]string

func (m memFS) Open(name string) (fs.File, error) {
	text, ok := m[name]
	if !ok || !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &memFile{Reader: strings.NewReader(text), info: memInfo{name: path.Base(name), size: int64(len(text))}}, nil
}

type memFile struct {
	*strings.Reader
	info memInfo
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *memFile) Close() error               { return nil }

type memInfo struct {
	name string
	size int64
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() fs.FileMode  { return 0o444 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }
