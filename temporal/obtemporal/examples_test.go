package obtemporal_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/obelisk-plan/obelisk/temporal/obtemporal"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/vm"
)

// TestExamples: the examples that run offline (their tools answered by
// their mocks and the built-in tools) give the same status and output on
// Temporal as a local run.
func TestExamples(t *testing.T) {
	_, c := newServer(t)
	ctx := testCtx(t)
	for _, name := range []string{"booking-fallback", "parallel-fanout", "payment-failure", "profile-summary", "refund", "research-report", "translation", "travel-pet"} {
		t.Run(name, func(t *testing.T) {
			text, input := readExample(t, name)
			mocksText, err := os.ReadFile(filepath.Join("..", "..", "examples", name+".mocks.json"))
			if err != nil {
				t.Fatal(err)
			}
			reg, decls := builtins(t)
			mocks := func() *toolkit.Mocks {
				m, err := toolkit.ParseMocks(mocksText)
				if err != nil {
					t.Fatal(err)
				}
				return m
			}

			// The local run, as obelisk run --yes makes it.
			prog := compileLocal(t, name+".plan", text, decls)
			var in map[string]any
			if len(input) > 0 {
				v, err := toolkit.DecodeJSON(input)
				if err != nil {
					t.Fatal(err)
				}
				in = v.(map[string]any)
			} else {
				in = prog.Info.File.InputValues
			}
			local, err := vm.Run(context.Background(), prog, in, vm.Options{
				Tools: toolkit.Chain{Mocks: mocks(), Registry: reg},
				Approver: vm.ApproverFunc(func(context.Context, vm.ApprovalRequest) (vm.Decision, error) {
					return vm.Decision{Approved: true}, nil
				}),
			})
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(local.Output)
			if err != nil {
				t.Fatal(err)
			}

			// The same on Temporal.
			queue := "examples-" + name
			startWorker(t, c, queue, obtemporal.Config{Tools: toolkit.Chain{Mocks: mocks(), Registry: reg}, Check: checkConfig(decls)})
			id, err := obtemporal.StartRun(ctx, c, queue, "", obtemporal.Start{Plan: obtemporal.Plan{Name: name + ".plan", Text: text}, Input: input, ApproveAll: true}, 0)
			if err != nil {
				t.Fatal(err)
			}
			out, err := obtemporal.Wait(ctx, c, id)
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != local.Status {
				t.Errorf("status %s (%s), locally %s (%v)", out.Status, out.Error, local.Status, local.Err)
			}
			if got, want := canonical(t, out.Output), canonical(t, want); got != want {
				t.Errorf("output on Temporal:\n%s\nlocally:\n%s", got, want)
			}
			if out.Summary.Completed != local.Completed || out.Summary.Failed != local.Failed || out.Summary.Skipped != local.Skipped || out.Summary.Retries != local.Retries || out.Summary.Replans != local.Replans {
				t.Errorf("summary %+v, locally completed %d failed %d skipped %d retries %d replans %d", out.Summary, local.Completed, local.Failed, local.Skipped, local.Retries, local.Replans)
			}
		})
	}
}
