package planfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// Base returns the path of a plan without its extension (.plan or
// .json): the name of the files beside it that go with it, such as
// NAME.input.json. It returns "" for "" (a plan with no path).
func Base(path string) string {
	return strings.TrimSuffix(strings.TrimSuffix(path, ".plan"), ".json")
}

// ReadInput returns the text of a plan's input: arg is the input's JSON
// text, or @FILE for a file's; with no arg, the file NAME.input.json
// beside the plan at path (see Base), if there is one and the plan has a
// path. It returns nil when no input is given; decoding the text is the
// caller's.
func ReadInput(arg, path string) ([]byte, error) {
	switch {
	case strings.HasPrefix(arg, "@"):
		b, err := os.ReadFile(arg[1:])
		if err != nil {
			return nil, fmt.Errorf("reading input: %w", err)
		}
		return b, nil
	case arg != "":
		return []byte(arg), nil
	case path != "":
		b, err := os.ReadFile(Base(path) + ".input.json")
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("reading input: %w", err)
		}
		return b, nil
	}
	return nil, nil
}
