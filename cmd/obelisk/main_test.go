package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/toolkit/mcp/mcptest"
)

// envCommandTool makes the test binary a command tool: it reads its
// arguments as JSON, appends them to the file the variable names, and
// writes {"score": len(text)}.
const envCommandTool = "OBELISK_TEST_COMMAND_TOOL"

func TestMain(m *testing.M) {
	asObelisk()
	mcptest.Main()
	if log := os.Getenv(envCommandTool); log != "" {
		var args struct{ Text string }
		b, _ := io.ReadAll(os.Stdin)
		if err := json.Unmarshal(b, &args); err != nil {
			fmt.Fprintln(os.Stderr, "score: the arguments are not JSON:", err)
			os.Exit(2)
		}
		f, _ := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		f.Write(append(b, '\n'))
		f.Close()
		fmt.Printf(`{"score": %d}`, len(args.Text))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runCLI runs the command line as main does.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Setenv("OBELISK_STATE_DIR", t.TempDir()) // runs are journaled out of the source tree
	var out, errOut bytes.Buffer
	e := &env{}
	e.Stdin, e.Stdout, e.Stderr = strings.NewReader(""), &out, &errOut
	code = run(context.Background(), args, e)
	return code, out.String(), errOut.String()
}
