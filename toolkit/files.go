package toolkit

import (
	"errors"
	"io/fs"
)

// FileKind says in words what kind of file a mode describes ("a
// directory", "a named pipe", "a device"), for messages that refuse a file
// that is not a regular one.
func FileKind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a special file"
}

// EscapesRoot reports whether err is an os.Root's refusal of a path that
// leads out of its directory, through ".." or a symbolic link. The os
// package does not export that error, so it is matched by its text; an
// error it does not match still refuses the path, with another message.
func EscapesRoot(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if err.Error() == "path escapes from parent" {
			return true
		}
	}
	return false
}
