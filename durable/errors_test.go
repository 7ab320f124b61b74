package durable

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/vm"
)

// TestNoApproverNamesSetting: a gate of a run that has nobody to ask and
// no journal to wait in is refused with vm.ErrNoApprover, whose message
// names the setting, never a command line's flag.
func TestNoApproverNamesSetting(t *testing.T) {
	_, err := planApproved{}.Approve(context.Background(), vm.ApprovalRequest{Step: "pay"})
	if !errors.Is(err, vm.ErrNoApprover) || !strings.Contains(err.Error(), "(vm.Options.Approver)") || strings.Contains(err.Error(), "--") {
		t.Errorf("got %v; want vm.ErrNoApprover naming its setting", err)
	}
}
