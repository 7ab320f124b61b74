package fill_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/obelisk-plan/obelisk/vm"
	"github.com/obelisk-plan/obelisk/vm/fill"
)

// TestRecording: a run recorded with its tools and fillings is replayed
// from the recording alone, calling no tool and asking no filler; a
// recording that cannot be read is an error.
func TestRecording(t *testing.T) {
	script, err := fill.ParseScript([]byte(`{"refund": {"amount": 12}}`))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	tl := refundTools()
	rec, err := fill.NewRecording(tl, path, "")
	if err != nil {
		t.Fatal(err)
	}
	if f := rec.Filler(nil); f != nil {
		t.Errorf("no filler recorded: %v", f)
	}
	res, err := vm.Run(context.Background(), compile(t, refundPlan), map[string]any{"customerId": "c1"},
		vm.Options{Tools: rec.Tools(), Approver: &approvals{}, Filler: rec.Filler(script)})
	if err != nil || res.Status != vm.RunCompleted {
		t.Fatalf("run: %v %v %v", err, res.Status, res.Err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}

	none := &tools{}
	rep, err := fill.NewRecording(none, "", path)
	if err != nil {
		t.Fatal(err)
	}
	res2, err := vm.Run(context.Background(), compile(t, refundPlan), map[string]any{"customerId": "c1"},
		vm.Options{Tools: rep.Tools(), Approver: &approvals{}, Filler: rep.Filler(nil)})
	if err != nil || res2.Status != vm.RunCompleted || res2.Output != res.Output {
		t.Fatalf("replay: %v %v %v %v", err, res2.Status, res2.Err, res2.Output)
	}
	if len(none.called("checkBillingHistory")) != 0 || len(tl.called("issueRefund")) != 1 || fmt.Sprint(tl.called("issueRefund")[0]["amount"]) != "12" {
		t.Errorf("calls: replayed %v, recorded %v", none.called("checkBillingHistory"), tl.called("issueRefund"))
	}
	if err := rep.Close(); err != nil {
		t.Error(err)
	}
	if _, err := fill.NewRecording(tl, "", filepath.Join(t.TempDir(), "none.jsonl")); err == nil {
		t.Error("a recording that is not there is replayed")
	}
}
