package durable_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestJournalBehindDurable: the journal is durable's implementation. Of
// the packages of the tree (the Temporal module's too) only durable
// imports it, and the interpreter's packages below it (vm and its
// subpackages, the journal's tests among them); what stands above
// durable uses durable.
func TestJournalBehindDurable(t *testing.T) {
	const journal = "github.com/obelisk-plan/obelisk/vm/journal"
	root := ".."
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			if rel == "durable" || rel == "vm" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == journal {
				t.Errorf("%s imports %s: use package durable", rel, journal)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("read the imports of %d files; the walk missed the tree", checked)
	}
}
