package vm

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/obelisk-plan/obelisk/toolkit"
)

// flagLike is how a command line's flag looks in a message.
var flagLike = regexp.MustCompile(`(^|[\s(])--[a-z]`)

// wantSetting fails unless msg names setting and no flag.
func wantSetting(t *testing.T, what, msg, setting string) {
	t.Helper()
	if !strings.Contains(msg, "("+setting+")") || flagLike.MatchString(msg) {
		t.Errorf("%s: %q names no (%s), or a flag", what, msg, setting)
	}
}

// TestErrorsNameSettings: the errors of limits and settings carry their
// code and name the setting by its Go name, never a command line's flag.
func TestErrorsNameSettings(t *testing.T) {
	ctx := context.Background()
	prog := compile(t, "tool big(n: int) -> string pure\nbig(n: 5000) -> †state.large\n")
	o := opts(newFakeTools().on("big", func(ctx context.Context, args map[string]any) (any, error) {
		return strings.Repeat("x", int(args["n"].(int64))), nil
	}), nil)
	o.MaxOutputBytes = 1000
	res, err := Run(ctx, prog, nil, o)
	if err != nil || res.Steps[0].Error == nil || res.Steps[0].Error.Code != toolkit.CodeLimitExceeded {
		t.Fatalf("over the output limit: %v %+v", err, res.Steps[0])
	}
	wantSetting(t, "output limit", res.Steps[0].Error.Message, "vm.Options.MaxOutputBytes")

	prog = compile(t, "tool get() -> [int] pure\ntool use(x: int) -> int pure\nget() -> †state.xs\nuse(x: 1) -> †state.r\n  when †state.xs.exists(i, i < 0)\n")
	o = opts(newFakeTools().on("get", func(ctx context.Context, args map[string]any) (any, error) {
		xs := make([]any, 1000)
		for i := range xs {
			xs[i] = int64(i)
		}
		return xs, nil
	}).on("use", echoTool), nil)
	o.MaxCost = 50
	res, err = Run(ctx, prog, nil, o)
	if err != nil || res.Steps[1].Error == nil || res.Steps[1].Error.Code != toolkit.CodeLimitExceeded {
		t.Fatalf("over the cost limit: %v %+v", err, res.Steps[1])
	}
	wantSetting(t, "cost limit", res.Steps[1].Error.Message, "vm.Options.MaxCost")

	prog = compile(t, "tool hang() -> int pure\nhang() -> †state.a\n")
	o = opts(newFakeTools().on("hang", blockTool(nil)), nil)
	o.RunTimeout = 20 * time.Millisecond
	res, err = Run(ctx, prog, nil, o)
	var re *toolkit.Error
	if err != nil || !errors.As(res.Err, &re) || re.Code != toolkit.CodeLimitExceeded {
		t.Fatalf("over the time limit: %v %v", err, res.Err)
	}
	wantSetting(t, "time limit", re.Message, "vm.Options.RunTimeout")

	prog = compile(t, "tool pay(amount: int) -> int irreversible\npay(amount: 5) -> †state.r\n  approve \"Pay?\"\n")
	res, err = Run(ctx, prog, nil, opts(newFakeTools().on("pay", echoTool), nil))
	if err != nil || res.Steps[0].Error == nil || res.Steps[0].Error.Code != toolkit.CodeRejected {
		t.Fatalf("no approver: %v %+v", err, res.Steps[0])
	}
	wantSetting(t, "no approver", res.Steps[0].Error.Message, "vm.Options.Approver")
	if !strings.HasSuffix(res.Steps[0].Error.Message, ErrNoApprover.Error()) {
		t.Errorf("no approver: %q does not end with ErrNoApprover's message", res.Steps[0].Error.Message)
	}
}
