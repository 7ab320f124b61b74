// Package planfile keeps a plan together with everything its compilation
// reads, so that the same program can be built again later: by `obelisk
// apply` from a planfile, by `obelisk resume` from a run's journal.
//
// A Source is the plan's text, the tools files given outside it (and the
// built-in tools' definitions), and the files it imports; compiling it is
// deterministic, so the steps, their IDs and their order come out the
// same every time. A Planfile adds the plan's input, the signatures of
// the tools it calls and a content hash over the three: Stale compares
// those signatures with the tools as they are now, and refuses a plan
// whose tools have changed since it was made.
//
// It is also the one path from a plan's text to its program, for every
// front end: IsJSON says which parser reads a text, Source.Parse parses
// it, Build checks a parsed plan against a checker's configuration and
// compiles it, and Source.Compile and Source.Load do all three. A tool's
// definition reaches the checker the same way: written as a tools file
// (ToolsFile), which a source records.
package planfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// File is a file read while compiling a plan.
type File struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// Source is a plan and everything its compilation reads.
type Source struct {
	// Name is the plan's file name as it was given; JSON is set for the
	// JSON form of a plan.
	Name string `json:"name"`
	JSON bool   `json:"json,omitempty"`
	Text string `json:"text"`
	// Dir is the directory the plan's imports are read from: the plan
	// file's directory, or "" for a plan read from standard input.
	Dir string `json:"dir,omitempty"`
	// WorkDir is the directory the plan was made in: Name, Dir and the
	// names of Tools and Imports, where relative, are relative to it.
	WorkDir string `json:"workDir,omitempty"`
	// Tools are the tools files read outside the plan (MCP tools/list
	// or OpenAI functions JSON), the built-in tools' definitions among
	// them, in the order the checker takes them.
	Tools []File `json:"tools,omitempty"`
	// Imports are the files the plan imports, by their paths relative
	// to Dir (see compiler.Info.Imports).
	Imports []File `json:"imports,omitempty"`
	// Strict and MaxParallel are the checker's and the compiler's
	// options.
	Strict      bool `json:"strict,omitempty"`
	MaxParallel int  `json:"maxParallel,omitempty"`
	// Hints are the operator's routing hints the plan was checked with,
	// an MCP server's resolved to its tools.
	Hints map[string]compiler.Hint `json:"hints,omitempty"`
}

// Path returns where the file the source names name is now: relative
// to WorkDir, so that a plan made in one directory is applied or resumed
// from any other.
func (s *Source) Path(name string) string {
	if s.WorkDir == "" || name == "" || filepath.IsAbs(name) || strings.HasPrefix(name, "<") {
		return name
	}
	return filepath.Join(s.WorkDir, name)
}

// Config returns the checker's configuration for the source: its tools
// files, and its imports served from the source itself.
func (s *Source) Config() (compiler.Config, lang.Diagnostics) {
	imports := make(memFS, len(s.Imports))
	for _, f := range s.Imports {
		imports[f.Name] = f.Text
	}
	for _, f := range s.Imports {
		// Sources recorded before imports were confined to Dir name them
		// by their path joined to Dir.
		if rel, err := filepath.Rel(s.Dir, f.Name); s.Dir != "" && err == nil && filepath.IsLocal(rel) {
			if _, ok := imports[filepath.ToSlash(rel)]; !ok {
				imports[filepath.ToSlash(rel)] = f.Text
			}
		}
	}
	cfg := compiler.Config{Strict: s.Strict, Imports: imports, Hints: s.Hints}
	var diags lang.Diagnostics
	for _, f := range s.Tools {
		decls, d := lang.ParseTools(f.Name, []byte(f.Text))
		diags = append(diags, d...)
		cfg.Tools = append(cfg.Tools, decls...)
	}
	return cfg, diags
}

// ImportRoot is the directory the plan's imports are read from now: Dir,
// or for a plan read from standard input the directory it was made in.
func (s *Source) ImportRoot() string {
	if s.Dir == "" {
		return s.Path(".")
	}
	return s.Path(s.Dir)
}

// Imports returns the files a check read for the plan's imports, to be
// kept as the source's Imports.
func Imports(info *compiler.Info) []File {
	if info == nil || len(info.Imports) == 0 {
		return nil
	}
	out := make([]File, len(info.Imports))
	for i, f := range info.Imports {
		out[i] = File{Name: f.Name, Text: string(f.Text)}
	}
	return out
}

// Compile parses, checks and compiles the source, checked with the
// configuration Config makes of it. It returns the program, or the
// diagnostics that stop it.
func (s *Source) Compile() (*compiler.Program, lang.Diagnostics, error) {
	cfg, diags := s.Config()
	f, pd := s.Parse()
	c, err := Build(f, append(diags, pd...), cfg, compiler.Options{MaxParallel: s.MaxParallel})
	return c.Program, c.Diagnostics, err
}

// Refresh returns a copy of the source whose tools files are read again
// through read, and its imports from ImportRoot by the rules of
// compiler.ReadImport, as they are now.
func (s *Source) Refresh(read func(name string) ([]byte, error)) (*Source, error) {
	out := *s
	var err error
	if out.Tools, err = reread(s.Tools, read); err != nil {
		return nil, fmt.Errorf("reading tools file: %w", err)
	}
	root := compiler.ImportDir(s.ImportRoot())
	out.Imports, err = reread(s.Imports, func(name string) ([]byte, error) {
		_, b, err := compiler.ReadImport(root, name)
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading an import: %w", err)
	}
	return &out, nil
}

func reread(files []File, read func(name string) ([]byte, error)) ([]File, error) {
	out := make([]File, len(files))
	for i, f := range files {
		b, err := read(f.Name)
		if err != nil {
			return nil, err
		}
		out[i] = File{Name: f.Name, Text: string(b)}
	}
	return out, nil
}

// Signature is what a plan relies on of a tool it calls: its parameters,
// its result type and its effect, with every named type spelled out.
type Signature struct {
	Name      string `json:"name"`
	Signature string `json:"signature"`
}

// Signatures returns the signatures of the tools a program calls (its
// sub-plans' included, fallbacks too), sorted by name. Sub-plans are part
// of the plan and have none.
func Signatures(prog *compiler.Program) []Signature {
	var out []Signature
	for _, t := range prog.NamedTools() {
		out = append(out, Signature{Name: t.Name, Signature: signature(t)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func signature(t *compiler.Tool) string {
	var b strings.Builder
	b.WriteString("(")
	for i, p := range t.Params {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.Name)
		if p.Optional {
			b.WriteString("?")
		}
		b.WriteString(": ")
		b.WriteString(typeText(p.Type, 0))
		if p.HasDefault {
			d, _ := json.Marshal(p.Default)
			b.WriteString(" = ")
			b.Write(d)
		}
	}
	b.WriteString(") -> ")
	b.WriteString(typeText(t.Result, 0))
	b.WriteString(" " + t.Effect.String())
	if t.Model {
		b.WriteString(" model")
	}
	return b.String()
}

// typeText spells a type out structurally: a declared type by its shape,
// not its name, so that a change to its declaration shows.
func typeText(t *compiler.Type, depth int) string {
	if t == nil {
		return "any"
	}
	if depth > 32 {
		return "…"
	}
	var s string
	switch t.Kind {
	case compiler.KindAny:
		s = "any"
	case compiler.KindNull:
		return "null"
	case compiler.KindBool:
		s = "bool"
	case compiler.KindInt:
		s = "int"
	case compiler.KindNumber:
		s = "number"
	case compiler.KindString:
		s = "string"
	case compiler.KindList:
		s = "[" + typeText(t.Elem, depth+1) + "]"
	case compiler.KindEnum:
		parts := make([]string, len(t.Values))
		for i, v := range t.Values {
			b, _ := json.Marshal(v)
			parts[i] = string(b)
		}
		s = "(" + strings.Join(parts, " | ") + ")"
	case compiler.KindObject:
		parts := make([]string, 0, len(t.Fields)+1)
		for _, f := range t.Fields {
			opt := ""
			if f.Optional {
				opt = "?"
			}
			parts = append(parts, f.Name+opt+": "+typeText(f.Type, depth+1))
		}
		if t.Open {
			parts = append(parts, "…")
		}
		s = "{" + strings.Join(parts, ", ") + "}"
	}
	if t.Nullable {
		s += "?"
	}
	return s
}

// Format is the format of a planfile, in its "format" field.
const Format = "obelisk-planfile/1"

// Planfile is a compiled plan to be run as it is: its source, its input,
// the signatures of the tools it calls, and a hash over the three.
type Planfile struct {
	Format string `json:"format"`
	// Hash is "sha256:" and the hex digest of the plan's text and
	// imports, the signatures and the input.
	Hash   string         `json:"hash"`
	Source Source         `json:"source"`
	Input  map[string]any `json:"input"`
	Tools  []Signature    `json:"tools"`
	// Program is the compiled plan, as `obelisk compile` prints it, for
	// people and programs to read; Apply checks that the source still
	// compiles to it.
	Program json.RawMessage `json:"program"`
}

// New makes the planfile of a compiled source and its input.
func New(src *Source, prog *compiler.Program, input map[string]any) (*Planfile, error) {
	pj, err := prog.JSON()
	if err != nil {
		return nil, err
	}
	if input == nil {
		input = map[string]any{}
	}
	pf := &Planfile{Format: Format, Source: *src, Input: input, Tools: Signatures(prog), Program: json.RawMessage(bytes.TrimSpace(pj))}
	if pf.Hash, err = pf.hash(); err != nil {
		return nil, err
	}
	return pf, nil
}

func (pf *Planfile) hash() (string, error) {
	content := struct {
		Name    string         `json:"name"`
		JSON    bool           `json:"json"`
		Text    string         `json:"text"`
		Imports []File         `json:"imports"`
		Tools   []Signature    `json:"tools"`
		Input   map[string]any `json:"input"`
	}{pf.Source.Name, pf.Source.JSON, pf.Source.Text, pf.Source.Imports, pf.Tools, pf.Input}
	b, err := json.Marshal(content)
	if err != nil {
		return "", fmt.Errorf("hashing the plan: %w", err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Marshal encodes the planfile as indented JSON. People read planfiles
// before they apply them: the characters a terminal acts on are escaped
// (lang.EscapeControlJSON), which does not change what the JSON holds.
func (pf *Planfile) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(pf); err != nil {
		return nil, fmt.Errorf("encoding the planfile: %w", err)
	}
	return lang.EscapeControlJSON(buf.Bytes()), nil
}

// Read decodes a planfile and checks its hash. A key given twice in an
// object of it is an error: people review planfiles, and JSON readers
// disagree on which of the two counts.
func Read(b []byte) (*Planfile, error) {
	var raw struct {
		Planfile
		Input json.RawMessage `json:"input"`
	}
	if err := toolkit.CheckUniqueKeys(b); err != nil {
		return nil, fmt.Errorf("not a planfile: %w", err)
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("not a planfile: %w", err)
	}
	pf := raw.Planfile
	if pf.Format != Format {
		return nil, fmt.Errorf("not a planfile of this version: format %q, want %q", pf.Format, Format)
	}
	if len(raw.Input) > 0 {
		v, err := toolkit.DecodeJSON(raw.Input)
		if err != nil {
			return nil, fmt.Errorf("the planfile's input: %w", err)
		}
		m, ok := v.(map[string]any)
		if !ok && v != nil {
			return nil, errors.New("the planfile's input is not an object")
		}
		pf.Input = m
	}
	if pf.Input == nil {
		pf.Input = map[string]any{}
	}
	h, err := pf.hash()
	if err != nil {
		return nil, err
	}
	if h != pf.Hash {
		return nil, fmt.Errorf("the planfile was changed after it was written: its content hashes to %s, not %s", h, pf.Hash)
	}
	return &pf, nil
}

// StaleError reports a planfile whose tools changed since it was made.
type StaleError struct {
	// Changes says, one line per tool, what changed.
	Changes []string
}

// Error lists the changes.
func (e *StaleError) Error() string {
	return "the plan is stale: " + strings.Join(e.Changes, "; ")
}

// Compile compiles the planfile's source and checks that it gives the
// program the planfile holds.
func (pf *Planfile) Compile() (*compiler.Program, lang.Diagnostics, error) {
	prog, diags, err := pf.Source.Compile()
	if err != nil {
		return nil, diags, err
	}
	pj, err := prog.JSON()
	if err != nil {
		return nil, diags, err
	}
	// Marshal escapes the characters a terminal acts on: both sides are
	// compared escaped so.
	var got, want bytes.Buffer
	if json.Compact(&got, lang.EscapeControlJSON(pj)) != nil || json.Compact(&want, lang.EscapeControlJSON(pf.Program)) != nil || !bytes.Equal(got.Bytes(), want.Bytes()) {
		return nil, diags, errors.New("the plan compiles to another program than the planfile holds: it was written by another version of obelisk; make it again with obelisk plan")
	}
	return prog, diags, nil
}

// Stale compares the signatures of the tools the plan calls with those of
// the tools as they are now: the source with its tools files and imports
// read again (see Source.Refresh). It returns a *StaleError when one has
// changed, or when the plan no longer checks against them.
func (pf *Planfile) Stale(now *Source) error {
	prog, diags, err := now.Compile()
	if err != nil {
		var msgs []string
		for _, d := range diags {
			if d.Severity == lang.SeverityError {
				msgs = append(msgs, d.Message)
			}
		}
		if len(msgs) == 0 {
			msgs = append(msgs, err.Error())
		}
		return &StaleError{Changes: []string{"the plan no longer checks against the tools as they are now: " + strings.Join(msgs, "; ")}}
	}
	cur := map[string]string{}
	for _, s := range Signatures(prog) {
		cur[s.Name] = s.Signature
	}
	var changes []string
	for _, s := range pf.Tools {
		c, ok := cur[s.Name]
		switch {
		case !ok:
			changes = append(changes, fmt.Sprintf("tool %s is gone", s.Name))
		case c != s.Signature:
			changes = append(changes, fmt.Sprintf("tool %s changed from %s to %s", s.Name, s.Signature, c))
		}
	}
	if len(changes) > 0 {
		return &StaleError{Changes: changes}
	}
	return nil
}
