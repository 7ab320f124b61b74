package planfile

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
)

// IsJSON reports whether a plan's text is in the JSON form, and so which
// parser reads it. A name ending in .json or .plan says; any other name
// ("" or "<stdin>" among them) leaves it to the text, which is JSON when
// it begins, after spaces and a byte-order mark, with [ or {, as no plan
// text does. It does not say whether the JSON is a plan: the JSON parser
// reports what is not (lang.IsJSONPlan tells a plan in a model's answer
// from other JSON).
func IsJSON(name string, text []byte) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".json":
		return true
	case ".plan":
		return false
	}
	t := bytes.TrimLeft(text, " \t\r\n\ufeff")
	return len(t) > 0 && (t[0] == '[' || t[0] == '{')
}

// Parse parses the source's text in its form.
func (s *Source) Parse() (*lang.File, lang.Diagnostics) {
	if s.JSON {
		return lang.ParseJSON(s.Name, []byte(s.Text))
	}
	return lang.Parse(s.Name, []byte(s.Text))
}

// WithText returns a copy of the source holding another plan, in plan
// text: a plan a person edited while approving, to be checked with what
// the source's plan was checked with (its tools files, imports, hints and
// options).
func (s *Source) WithText(name, text string) *Source {
	out := *s
	out.Name, out.JSON, out.Text = name, false, text
	return &out
}

// Compiled is a plan taken from its text towards a program, as far as it
// went: each stage runs only when the ones before it found no error.
type Compiled struct {
	// File is the parsed plan; nil when Build was given none.
	File *lang.File
	// Info is the checked plan; nil when the checker did not run.
	Info *compiler.Info
	// Diagnostics are those given to Build, then the checker's, in the
	// order they were found.
	Diagnostics lang.Diagnostics
	// Program is the compiled plan; nil when a stage stopped.
	Program *compiler.Program
}

// Build checks a parsed plan against cfg and compiles it with opts. diags
// are the diagnostics found before, the parser's and those of the tools
// files cfg was made from: when they hold an error, Build stops before the
// checker, whose findings would follow from it. It returns what it made,
// and an error when it made no program: then either the diagnostics hold
// an error, or the compiler's error is returned (a limit the program
// exceeds).
func Build(f *lang.File, diags lang.Diagnostics, cfg compiler.Config, opts compiler.Options) (*Compiled, error) {
	c := &Compiled{File: f, Diagnostics: diags}
	name := "the plan"
	if f != nil && f.Name != "" {
		name = f.Name
	}
	if f == nil || diags.HasErrors() {
		return c, fmt.Errorf("%s does not parse", name)
	}
	info, cd := compiler.Check(f, cfg)
	c.Info = info
	c.Diagnostics = append(c.Diagnostics, cd...)
	if c.Diagnostics.HasErrors() {
		return c, fmt.Errorf("%s does not check", name)
	}
	prog, err := compiler.Compile(info, c.Diagnostics, opts)
	if err != nil {
		return c, err
	}
	c.Program = prog
	return c, nil
}

// Load parses the source's text in its form, checks it against cfg and
// compiles it with the source's MaxParallel: the path from text to program
// for a caller whose checker's configuration is its own, not the one
// Config makes (a server's tools and limits, a worker's). See Build for
// what it returns.
func (s *Source) Load(cfg compiler.Config) (*Compiled, error) {
	f, diags := s.Parse()
	return Build(f, diags, cfg, compiler.Options{MaxParallel: s.MaxParallel})
}
