package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
)

func versionCommand() *command {
	return &command{
		Name:    "version",
		Summary: "print obelisk's version, the Go version it was built with, and its source revision",
		Setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
			return func(ctx context.Context, args []string) int {
				if len(args) != 0 {
					return usageError(e, "version", "expected no arguments, got %d", len(args))
				}
				info, ok := debug.ReadBuildInfo()
				if !ok {
					e.Errorf("this binary carries no build information")
					return exitUsage
				}
				writeVersion(e.Stdout, info)
				return exitOK
			}
		},
	}
}

// writeVersion prints what the build information says of the binary:
//
//	obelisk v0.3.1 (go1.26.8)
//	revision 1f2e3d4c5b6a (2026-11-24T08:00:00Z, modified)
//
// The module version is "(devel)" for a build from a checkout (go build,
// go run), which the revision line then identifies. A build that recorded
// neither (go build -buildvcs=false, a source tree without its .git) says
// so on the second line rather than leave the reader to guess.
func writeVersion(w io.Writer, info *debug.BuildInfo) {
	version := info.Main.Version
	released := version != "" && version != "(devel)"
	if !released {
		version = "(devel)"
	}
	fmt.Fprintf(w, "obelisk %s (%s)\n", version, info.GoVersion)
	var revision, at string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if revision == "" {
		if !released {
			fmt.Fprintln(w, "this build recorded no module version and no source revision")
		}
		return
	}
	fmt.Fprintf(w, "revision %s", revision)
	switch {
	case at != "" && modified:
		fmt.Fprintf(w, " (%s, modified)", at)
	case at != "":
		fmt.Fprintf(w, " (%s)", at)
	case modified:
		fmt.Fprintf(w, " (modified)")
	}
	fmt.Fprintln(w)
}
