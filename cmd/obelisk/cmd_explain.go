package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/obelisk-plan/obelisk/lang"
)

func explainCommand() *command {
	return &command{
		Name:    "explain",
		Args:    "[CODE]",
		Summary: "describe a diagnostic code, with an example and how to fix it (all codes without CODE)",
		Setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
			return func(ctx context.Context, args []string) int {
				docs := lang.CodeDocs()
				w := advisingWriter{escapingWriter{e.Stdout}}
				if len(args) == 0 {
					for _, d := range docs {
						fmt.Fprintf(w, "%-22s %-7s %s\n", d.Code, d.Severity, d.Summary)
					}
					return exitOK
				}
				for _, d := range docs {
					if string(d.Code) == args[0] {
						fmt.Fprintf(w, "%s (%s)\n\n%s.\n\nFix: %s\n", d.Code, d.Severity, upperFirst(d.Summary), d.Fix)
						if d.Example != "" {
							fmt.Fprintf(w, "\nExample:\n\n%s", indent(d.Example))
						}
						return exitOK
					}
				}
				var names []string
				for _, d := range docs {
					names = append(names, string(d.Code))
				}
				hint := ""
				if s := lang.Closest(args[0], names); s != "" {
					hint = fmt.Sprintf(" (did you mean %q?)", s)
				}
				return usageError(e, "explain", "unknown code %q%s", args[0], hint)
			}
		},
	}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return "\t" + strings.Join(lines, "\n\t") + "\n"
}
