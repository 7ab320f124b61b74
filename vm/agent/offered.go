package agent

import (
	"context"
	"fmt"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/vm"
)

// A model's plan may call the tools it is offered (the context's) and
// nothing else: the operator decides what the model is offered, and a
// tool the checker or the runtime knows besides (a built-in one, a tool
// of a server under another name) is not thereby the model's.

// offeredConfig returns the checker's configuration knowing only the
// offered tools: the operator's definition of each where cfg has one
// (that definition is the tool's), else the context's declaration.
func offeredConfig(cfg compiler.Config, c *Context) compiler.Config {
	byName := map[string]*lang.ToolDecl{}
	for _, d := range cfg.Tools {
		if _, ok := byName[d.Name.Name]; !ok {
			byName[d.Name.Name] = d
		}
	}
	out := cfg
	out.Tools = make([]*lang.ToolDecl, 0, len(c.Tools))
	seen := map[string]bool{}
	for _, d := range c.Tools {
		if seen[d.Name.Name] {
			continue
		}
		seen[d.Name.Name] = true
		if op := byName[d.Name.Name]; op != nil {
			d = op
		}
		out.Tools = append(out.Tools, d)
	}
	return out
}

// offeredTools calls only the offered tools. A plan the checker let
// through cannot call another, even by declaring it: its call fails.
type offeredTools struct {
	names map[string]bool
	next  vm.Caller
}

func newOfferedTools(c *Context, next vm.Caller) offeredTools {
	names := map[string]bool{}
	for _, d := range c.Tools {
		names[d.Name.Name] = true
	}
	return offeredTools{names: names, next: next}
}

// Call calls the tool if it was offered.
func (o offeredTools) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	if !o.names[name] {
		return nil, &toolkit.Error{Code: toolkit.CodeUnknownTool, NotRetryable: true,
			Message: fmt.Sprintf("tool %s was not offered: call only the tools of the [tools] context message", name)}
	}
	return o.next.Call(ctx, name, args)
}
