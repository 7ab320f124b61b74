package toolset

import (
	"fmt"
	"slices"
	"strings"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/stdlib"
	"github.com/obelisk-plan/obelisk/toolkit/cmdtool"
	"github.com/obelisk-plan/obelisk/toolkit/httptool"
)

// ProblemCode says what keeps a tool from running.
type ProblemCode string

// The codes of the problems Preflight finds.
const (
	// Missing: nothing implements the tool.
	Missing ProblemCode = "missing"
	// FilesOff: a built-in file tool, while no files root is given.
	FilesOff ProblemCode = "files-off"
	// Imported: the tool's http or command block is in a file the plan
	// imports, which gives only signatures (File names it, as the plan
	// imports it; Kind is the block's kind).
	Imported ProblemCode = "imported"
	// CommandsOff: a command tool, while command tools are off.
	CommandsOff ProblemCode = "commands-off"
	// NetworkOff: a built-in network tool, while the network is off.
	NetworkOff ProblemCode = "network-off"
	// EnvDenied: an HTTP tool reads environment variables the grants do
	// not grant (Err says which).
	EnvDenied ProblemCode = "env-denied"
	// EnvUnset: an HTTP tool needs environment variables that are not set
	// (Env names them).
	EnvUnset ProblemCode = "env-unset"
	// HostDenied: an HTTP tool reaches a host the grants do not allow.
	HostDenied ProblemCode = "host-denied"
)

// Problem is what keeps a tool a program calls from running.
type Problem struct {
	Code ProblemCode
	// Tool is the tool's name.
	Tool string
	// File is the tools file of the tool's http or command block (for
	// Imported, the imported file); Kind is the block's kind.
	File, Kind string
	// Env are the environment variables that are not set (EnvUnset).
	Env []string
	// Err is the cause (EnvDenied, HostDenied).
	Err error
}

// Error says what the problem is, naming no way of solving it.
func (p Problem) Error() string {
	switch p.Code {
	case FilesOff:
		return fmt.Sprintf("%s is off: the file tools work only in a directory the operator names", p.Tool)
	case Imported:
		return fmt.Sprintf("no implementation for %s: its %s block is in %s, which the plan imports, and an imported file gives only signatures", p.Tool, p.Kind, p.File)
	case CommandsOff:
		return fmt.Sprintf("%s runs a program (its command block in %s); command tools are off", p.Tool, p.File)
	case NetworkOff:
		return fmt.Sprintf("%s reaches the network, which is off", p.Tool)
	case EnvDenied:
		return fmt.Sprintf("%s reads the environment (its http block in %s): %v", p.Tool, p.File, p.Err)
	case EnvUnset:
		return fmt.Sprintf("%s needs the environment variable %s (its http block in %s)", p.Tool, strings.Join(p.Env, ", "), p.File)
	case HostDenied:
		return fmt.Sprintf("%s (its http block in %s): %v", p.Tool, p.File, p.Err)
	}
	return fmt.Sprintf("no implementation for %s", p.Tool)
}

// Preflight says what keeps the tools a program calls from running,
// before anything runs, in the order of their first call: first the tools
// nothing implements (Missing, FilesOff, Imported), then a command tool
// while command tools are off, a built-in network tool while the network
// is off, an HTTP tool whose environment variables are not granted or not
// set or whose host is not allowed. Tools the mocks answer are not called,
// so nothing keeps them.
func (s *Set) Preflight(prog *compiler.Program) []Problem {
	if prog == nil {
		return nil
	}
	bound := map[string]*bound{}
	for _, bt := range s.bound {
		bound[bt.def.Name] = bt
	}
	called := prog.CalledTools()
	var missing, out []Problem
	for _, t := range called {
		name := t.Name
		if s.Has(name) {
			continue
		}
		p := Problem{Code: Missing, Tool: name}
		switch {
		case name == "file.read" || name == "file.write":
			p.Code = FilesOff
		case t.File != "" && t.Plan == nil && t.Decl != nil && t.Decl.Binding != nil:
			p.Code, p.Kind, p.File = Imported, t.Decl.Binding.Kind, t.File
		}
		missing = append(missing, p)
	}
	for _, t := range called {
		name := t.Name
		if s.mocks.Has(name) {
			continue
		}
		bt := bound[name]
		if s.net.Off() && stdlib.NeedsNetwork(name) && bt == nil {
			out = append(out, Problem{Code: NetworkOff, Tool: name})
			continue
		}
		if bt == nil {
			continue
		}
		switch impl := bt.impl.(type) {
		case *cmdtool.Tool:
			if s.commandsOff {
				out = append(out, Problem{Code: CommandsOff, Tool: name, File: bt.file, Kind: bt.kind})
			}
		case *httptool.Tool:
			if err := impl.CheckEnv(); err != nil {
				out = append(out, Problem{Code: EnvDenied, Tool: name, File: bt.file, Kind: bt.kind, Err: err})
			} else if unset := impl.MissingEnv(); len(unset) > 0 {
				out = append(out, Problem{Code: EnvUnset, Tool: name, File: bt.file, Kind: bt.kind, Env: unset})
			} else if err := impl.CheckNet(); err != nil {
				out = append(out, Problem{Code: HostDenied, Tool: name, File: bt.file, Kind: bt.kind, Err: err})
			}
		}
	}
	return append(missing, out...)
}

// Unimplemented reports whether a problem is that nothing implements the
// tool (Missing, FilesOff, Imported), rather than that the grants or the
// settings keep it from running.
func (p Problem) Unimplemented() bool {
	return p.Code == Missing || p.Code == FilesOff || p.Code == Imported
}

// WeakSecret is a tool a program calls whose secrets, as the environment
// makes them, include some that cannot be hidden within text (Secrets
// names them: ${NAME}, or [redacted]): a result or an error of the tool
// that holds one is withheld whole.
type WeakSecret struct {
	Tool, File string
	Secrets    []string
}

// String says what the operator should know, for a warning before a run.
func (w WeakSecret) String() string {
	return fmt.Sprintf("%s (its http block in %s) sends %s, too short or too plain to be told apart from ordinary text: a result or an error of the tool that holds it is withheld whole, since replacing it would garble unrelated text; a secret of at least 8 bytes with a character that is not a letter is hidden where it occurs",
		w.Tool, w.File, strings.Join(w.Secrets, ", "))
}

// WeakSecrets returns the HTTP tools a program calls, in the order of
// their first call, whose secrets include some that cannot be hidden
// within text. It is meaningful once Preflight finds nothing.
func (s *Set) WeakSecrets(prog *compiler.Program) []WeakSecret {
	if prog == nil {
		return nil
	}
	var out []WeakSecret
	for _, t := range prog.CalledTools() {
		out = append(out, s.weakSecrets(t.Name)...)
	}
	return out
}

// AllWeakSecrets returns every HTTP tool of the set, in the order they
// were bound, whose secrets include some that cannot be hidden within
// text: what a server that runs any plan with these tools warns of as it
// starts.
func (s *Set) AllWeakSecrets() []WeakSecret {
	var out []WeakSecret
	for i, bt := range s.bound {
		if !slices.ContainsFunc(s.bound[:i], func(o *bound) bool { return o.def.Name == bt.def.Name }) {
			out = append(out, s.weakSecrets(bt.def.Name)...)
		}
	}
	return out
}

// weakSecrets returns the HTTP tools named tool, unless a mock answers
// it, whose secrets include some that cannot be hidden within text.
func (s *Set) weakSecrets(tool string) []WeakSecret {
	if s.mocks.Has(tool) {
		return nil
	}
	var out []WeakSecret
	for _, bt := range s.bound {
		if impl, ok := bt.impl.(*httptool.Tool); ok && bt.def.Name == tool {
			if names := impl.WeakSecrets(); len(names) > 0 {
				out = append(out, WeakSecret{Tool: tool, File: bt.file, Secrets: names})
			}
		}
	}
	return out
}
