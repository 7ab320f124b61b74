package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/obelisk-plan/obelisk/lang"
)

func fmtCommand() *command {
	return &command{
		Name:    "fmt",
		Args:    "FILE...",
		Summary: "print plans in the canonical layout (-w rewrites .plan files in place); a JSON plan is printed as .plan text",
		Setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
			registerMaxDiagnostics(fs, e)
			write := fs.Bool("w", false, "rewrite .plan files in place instead of printing them")
			list := fs.Bool("l", false, "list the files whose layout differs from the canonical one")
			return func(ctx context.Context, args []string) int {
				if len(args) == 0 {
					return usageError(e, "fmt", "no files given (use - for standard input)")
				}
				status := exitOK
				for _, arg := range args {
					src, err := readSource(e, arg)
					if err != nil {
						fmt.Fprintf(e.Stderr, "obelisk fmt: %v\n", err)
						status = max(status, exitUsage)
						continue
					}
					if *write && (src.JSON || planPath(src) == "") {
						return usageError(e, "fmt", "-w rewrites .plan files; to convert %s, redirect the output: obelisk fmt %s > NAME.plan", src.Name, arg)
					}
					f, diags := src.Parse()
					if diags.HasErrors() {
						printDiagnostics(e, lang.Sources{src.Name: []byte(src.Text)}, diags)
						status = max(status, exitInput)
						continue
					}
					out := lang.Format(f)
					changed := string(out) != src.Text
					switch {
					case *list:
						if changed {
							fmt.Fprintln(e.Stdout, src.Name)
						}
					case *write:
						if changed {
							if err := os.WriteFile(src.Name, out, 0o644); err != nil {
								fmt.Fprintf(e.Stderr, "obelisk fmt: %v\n", err)
								status = max(status, exitUsage)
							}
						}
					default:
						e.Stdout.Write(out)
					}
				}
				return status
			}
		},
	}
}
