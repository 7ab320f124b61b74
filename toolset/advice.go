package toolset

import (
	"errors"
	"fmt"
	"strings"
)

// FlagAdvice says what keeps a tool from running and which of the flags
// Flags registers (or a mocks file) lets it run; again says how the
// program is started again with the flag, as "run again" or "start the
// worker". A problem no flag solves is said as p.Error says it.
func FlagAdvice(p Problem, again string) string {
	switch p.Code {
	case CommandsOff:
		return fmt.Sprintf("%s runs a program (its command block in %s); command tools are off: %s with --allow-commands to let them run", p.Tool, p.File, again)
	case NetworkOff:
		return fmt.Sprintf("%s reaches the network, which is off: %s with --allow-net=HOST,… naming the hosts the plan may reach (bare --allow-net: any public host), or answer it in a mocks file", p.Tool, again)
	case EnvUnset:
		return fmt.Sprintf("%s needs the environment variable %s (its http block in %s): set it, or answer the tool in a mocks file", p.Tool, strings.Join(p.Env, ", "), p.File)
	case FilesOff:
		return fmt.Sprintf("%s is off: the file tools work only in a directory the command line names: give --files DIR to let the plan read and write the files in DIR, or answer it in a mocks file", p.Tool)
	}
	return p.Error()
}

// FlagError returns an error of Open that a flag Flags registers is wrong
// about (--mcp, --mcp-parallel) as that flag's error, naming the flag, and
// nil for another error.
func FlagError(err error) error {
	var te *Error
	if !errors.As(err, &te) {
		return nil
	}
	switch te.Code {
	case CodeMCPSpec:
		return fmt.Errorf("--mcp %w", err)
	case CodeMCPParallel:
		return fmt.Errorf("--mcp-parallel %w", err)
	case CodeMCPUnknown:
		return fmt.Errorf("--mcp-parallel %w: name one of --mcp", err)
	}
	return nil
}
