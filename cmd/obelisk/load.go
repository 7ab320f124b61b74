package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
)

// readSource reads a plan file; "-" reads standard input. The source's
// Dir is the file's directory, "" for standard input (see planPath); its
// form is the one planfile.IsJSON says.
func readSource(e *env, arg string) (*planfile.Source, error) {
	if arg == "-" {
		b, err := io.ReadAll(e.Stdin)
		if err != nil {
			return nil, fmt.Errorf("reading standard input: %w", err)
		}
		return &planfile.Source{Name: "<stdin>", Text: string(b), JSON: planfile.IsJSON("<stdin>", b)}, nil
	}
	b, err := os.ReadFile(arg)
	if err != nil {
		return nil, fmt.Errorf("reading plan: %w", err)
	}
	return &planfile.Source{Name: arg, Dir: filepath.Dir(arg), Text: string(b), JSON: planfile.IsJSON(arg, b)}, nil
}

// planPath returns the path of the file a plan was read from, or "" for
// a plan read from standard input.
func planPath(src *planfile.Source) string {
	if src.Dir == "" {
		return ""
	}
	return src.Name
}

// printDiagnostics writes diagnostics for people on stderr.
func printDiagnostics(e *env, srcs lang.Sources, diags lang.Diagnostics) {
	lang.WriteText(e.Stderr, srcs, diags, e.textOptions())
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
