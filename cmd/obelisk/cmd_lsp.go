package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/lsp"
)

func lspCommand() *command {
	return &command{
		Name:    "lsp",
		Summary: "serve the language server of plans (diagnostics, hover, completion, definition, rename, formatting) to an editor on standard input and output",
		Setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
			var cf checkFlags
			cf.register(fs)
			cf.registerLimits(fs)
			workspace := fs.String("workspace", ".", "the directory whose "+lsp.WorkspaceFile+" names the operator's tools: {\"tools\": [FILE...], \"mcp\": [SERVER...], \"hints\": FILE, \"strict\": BOOL}")
			allowMCP := fs.Bool("workspace-mcp", false, "start the MCP servers the workspace file names (without it they are not started: an editor opens folders other people wrote)")
			debounce := fs.Duration("debounce", 150*time.Millisecond, "how long to wait after an edit before checking the plan again")
			return func(ctx context.Context, args []string) int {
				if len(args) > 0 {
					return usageError(e, "lsp", "lsp takes no files: the editor sends them")
				}
				ws, err := lsp.ReadWorkspace(*workspace)
				if err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				if ws != nil {
					cf.tf.Tools = append(cf.tf.Tools, ws.Tools...)
					if len(ws.MCP) > 0 && !*allowMCP {
						// Said whatever the log level: hover and completion
						// will not know these servers' tools.
						fmt.Fprintf(e.Stderr, "obelisk lsp: not starting the MCP servers %s names (%s): give --workspace-mcp to start them\n", lsp.WorkspaceFile, strings.Join(ws.MCP, ", "))
					} else {
						cf.tf.MCP = append(cf.tf.MCP, ws.MCP...)
					}
					if cf.hints == "" {
						cf.hints = ws.Hints
					}
					cf.strict = cf.strict || ws.Strict
				}
				stop, st := cf.connect(ctx, e, "lsp")
				if stop == nil {
					return st
				}
				defer stop()
				cfg, srcs, diags, err := cf.config(&planfile.Source{})
				if err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				if len(diags) > 0 {
					lang.WriteText(e.Stderr, srcs, diags, e.textOptions())
				}
				version := ""
				if info, ok := debug.ReadBuildInfo(); ok {
					version = info.Main.Version
				}
				opts := lsp.Options{
					Config: cfg, ToolFiles: cf.set.Files(), Debounce: *debounce, Version: version,
					Log: slog.New(slog.NewTextHandler(e.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
				}
				if err := lsp.Serve(ctx, stdio{e.Stdin, e.Stdout}, opts); err != nil {
					e.Errorf("%v", err)
					return exitInput // 1, as the protocol asks of an exit without shutdown
				}
				return exitOK
			}
		},
	}
}

// stdio is standard input and output as one connection.
type stdio struct {
	io.Reader
	io.Writer
}

// Close leaves standard input and output open: the process ends with
// the connection.
func (stdio) Close() error { return nil }
