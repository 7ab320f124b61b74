// Package spec holds the Obelisk language reference and its conformance
// suite: txtar files under spec/conformance, each a plan (section
// "input.plan" or "input.json") with the results the toolchain must produce
// (sections "parse", "format", "check", …). The tests of each package read
// the sections they own through this package and compare them with what
// they compute; run them with -update to rewrite the sections instead.
package spec

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
)

// Case is one conformance file.
type Case struct {
	// Path is the file's path; Name is its path below spec/conformance,
	// without the .txtar extension.
	Path, Name string
	// Comment is the text before the first section: what the case tests.
	Comment string
	archive *txtar.Archive
}

// Cases loads every conformance file. dir is the path of spec/conformance
// from the calling test's package directory, such as "../spec/conformance".
func Cases(t testing.TB, dir string) []*Case {
	t.Helper()
	var out []*Case
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".txtar" {
			return err
		}
		a, err := txtar.ParseFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out = append(out, &Case{
			Path:    path,
			Name:    strings.TrimSuffix(filepath.ToSlash(rel), ".txtar"),
			Comment: strings.TrimSpace(string(a.Comment)),
			archive: a,
		})
		return nil
	})
	if err != nil {
		t.Fatalf("loading conformance files: %v", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if len(out) == 0 {
		t.Fatalf("no conformance files under %s", dir)
	}
	return out
}

// Section returns the content of a section and whether it exists.
func (c *Case) Section(name string) ([]byte, bool) {
	for _, f := range c.archive.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return nil, false
}

// Files returns the sections whose names start with prefix, by their
// names without it: files a case gives beside its plan.
func (c *Case) Files(prefix string) map[string][]byte {
	out := map[string][]byte{}
	for _, f := range c.archive.Files {
		if name, ok := strings.CutPrefix(f.Name, prefix); ok {
			out[name] = f.Data
		}
	}
	return out
}

// Input returns the plan under test: its file name ("input.plan" or
// "input.json") and text.
func (c *Case) Input() (name string, text []byte, ok bool) {
	for _, n := range []string{"input.plan", "input.json"} {
		if b, ok := c.Section(n); ok {
			return n, b, true
		}
	}
	return "", nil, false
}

// Golden compares got with the section's content. With update set it
// rewrites the section (adding it if missing) instead. A missing section is
// an error only when required is set.
func (c *Case) Golden(t *testing.T, section string, got []byte, update, required bool) {
	t.Helper()
	want, ok := c.Section(section)
	if update {
		if ok && bytes.Equal(want, got) {
			return
		}
		c.set(section, got)
		if err := os.WriteFile(c.Path, txtar.Format(c.archive), 0o644); err != nil {
			t.Fatalf("updating %s: %v", c.Path, err)
		}
		return
	}
	if !ok {
		if required {
			t.Errorf("%s: no %q section (run the test with -update to write it)", c.Path, section)
		}
		return
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s: section %q differs (-want +got):\n%s", c.Path, section, diff)
	}
}

func (c *Case) set(section string, data []byte) {
	for i, f := range c.archive.Files {
		if f.Name == section {
			c.archive.Files[i].Data = data
			return
		}
	}
	c.archive.Files = append(c.archive.Files, txtar.File{Name: section, Data: data})
}
