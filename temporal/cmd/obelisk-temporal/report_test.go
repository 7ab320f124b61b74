package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/internal/cli"
	"github.com/obelisk-plan/obelisk/temporal/obtemporal"
	"github.com/obelisk-plan/obelisk/vm"
)

// TestReportStdout: as obelisk run does, report prints a run's output on
// stdout only when the run completed; a failed run prints nothing there
// (no null output), and a partial one shows its output on stderr.
func TestReportStdout(t *testing.T) {
	type reported struct {
		status     vm.RunStatus
		output     string
		code       int
		stdout     string
		stderrHas  string
		stderrLack string
	}
	for _, tc := range []reported{
		{vm.RunCompleted, `{"summary":"ok"}`, cli.ExitOK, "{\n  \"summary\": \"ok\"\n}\n", "completed: 1 steps", "not printed"},
		{vm.RunFailed, `{"summary":null}`, cli.ExitInput, "", "failed: 1 steps", "null"},
		{vm.RunFailed, ``, cli.ExitInput, "", "failed: 1 steps", "not printed"},
		{vm.RunPartial, `{"a":1,"b":null}`, cli.ExitInput, "", "its partial output (null for what failed), not printed on stdout:\n  {\n    \"a\": 1,\n    \"b\": null\n  }\n", ""},
	} {
		var stdout, stderr bytes.Buffer
		out := &obtemporal.Outcome{Status: tc.status, Output: json.RawMessage(tc.output), Summary: obtemporal.Summary{Steps: 1}}
		code := report(&env{Stdout: &stdout, Stderr: &stderr}, out)
		if code != tc.code || stdout.String() != tc.stdout || !strings.Contains(stderr.String(), tc.stderrHas) || tc.stderrLack != "" && strings.Contains(stderr.String(), tc.stderrLack) {
			t.Errorf("%s with output %s: exit %d, stdout %q, stderr:\n%s", tc.status, tc.output, code, stdout.String(), stderr.String())
		}
	}
}
