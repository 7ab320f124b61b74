package toolkit

import (
	"context"
	"time"
)

// CallInfo identifies one tool call of a run. The interpreter puts it in
// the context of every call; a tool reads it with CallInfoFrom or
// IdempotencyKey.
type CallInfo struct {
	// Run is the run's ID: the journal's for a journaled run, else a
	// random one the run was given when it started.
	Run string
	// Step is the step's ID, with the element index of a for each
	// ("fetch[2]") and the calling steps of a sub-plan
	// ("research[0]/search") before it.
	Step string
	// Tool is the tool called: the step's tool, or its fallback.
	Tool string
	// Attempt counts the calls of this step (1 for the first, 2 for the
	// first retry, …).
	Attempt int
	// Key is the idempotency key: the run, the step and the element,
	// and "fallback" for a fallback call ("3f9ac2e1/fetch[2]"). It is the
	// same for every attempt of a call and across resumes of a run, so a
	// tool that receives a key it has already acted on can return its
	// first result instead of acting again; it differs from run to run,
	// a run without a journal included.
	Key string
	// Timeout is the call's time limit: the operator's bound, or the
	// step's own timeout when it is shorter (0 when unknown). A caller
	// that runs the call elsewhere (another process, a queue) bounds it
	// by this.
	Timeout time.Duration
}

// CallInfoKey is the context key of a call's identity: WithCallInfo
// stores a CallInfo under it. A context type of its own that carries a
// call's identity answers Value(CallInfoKey{}) with its CallInfo.
type CallInfoKey struct{}

// WithCallInfo returns a context that carries a call's identity.
func WithCallInfo(ctx context.Context, c CallInfo) context.Context {
	return context.WithValue(ctx, CallInfoKey{}, c)
}

// CallInfoFrom returns the identity of the call ctx belongs to.
func CallInfoFrom(ctx context.Context) (CallInfo, bool) {
	c, ok := ctx.Value(CallInfoKey{}).(CallInfo)
	return c, ok
}

// IdempotencyKey returns the idempotency key of the call ctx belongs to,
// or "" outside a call.
func IdempotencyKey(ctx context.Context) string {
	c, _ := CallInfoFrom(ctx)
	return c.Key
}
