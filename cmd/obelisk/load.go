package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/obelisk-plan/obelisk/lang"
)

// source is a plan file as read from disk or standard input.
type source struct {
	name string // the path, or "<stdin>"
	path string // the path, or "" for standard input
	text []byte
	json bool // the JSON form
}

// readSource reads a plan file; "-" reads standard input.
func readSource(e *env, arg string) (*source, error) {
	if arg == "-" {
		b, err := io.ReadAll(e.stdin)
		if err != nil {
			return nil, fmt.Errorf("reading standard input: %w", err)
		}
		return &source{name: "<stdin>", text: b, json: looksLikeJSON(b)}, nil
	}
	b, err := os.ReadFile(arg)
	if err != nil {
		return nil, fmt.Errorf("reading plan: %w", err)
	}
	ext := strings.ToLower(filepath.Ext(arg))
	isJSON := ext == ".json" || (ext != ".plan" && looksLikeJSON(b))
	return &source{name: arg, path: arg, text: b, json: isJSON}, nil
}

// importDir is the directory the plan's imports are read from: the plan
// file's, or the current directory for standard input.
func (s *source) importDir() string {
	if s.path == "" {
		return "."
	}
	return filepath.Dir(s.path)
}

// looksLikeJSON reports whether text starts, after spaces, with '[' or '{',
// which no .plan file does.
func looksLikeJSON(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n\ufeff")
	return len(b) > 0 && (b[0] == '[' || b[0] == '{')
}

// parse parses the source in its form.
func (s *source) parse() (*lang.File, lang.Diagnostics) {
	if s.json {
		return lang.ParseJSON(s.name, s.text)
	}
	return lang.Parse(s.name, s.text)
}

// printDiagnostics writes diagnostics for people on stderr.
func printDiagnostics(e *env, srcs lang.Sources, diags lang.Diagnostics) {
	lang.WriteText(e.stderr, srcs, diags, e.textOptions())
}

// registerMaxDiagnostics adds --max-diagnostics to a command that prints
// diagnostics: a plan of a thousand calls on one line may have a warning
// for each.
func registerMaxDiagnostics(fs *flag.FlagSet, e *env) {
	fs.IntVar(&e.maxDiagnostics, "max-diagnostics", 100, "the most diagnostics of each severity to print, the first by position (the rest are counted); 0 prints them all")
}

// textOptions are how the command prints diagnostics.
func (e *env) textOptions() lang.TextOptions {
	return lang.TextOptions{Max: e.maxDiagnostics, More: "--max-diagnostics 0 shows them all"}
}
