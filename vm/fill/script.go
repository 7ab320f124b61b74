package fill

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/toolkit/replay"
	"github.com/obelisk-plan/obelisk/vm"
)

// Script is a vm.Filler that answers from a fills file, as a mocks file
// answers tools: a plan with holes and tasks runs offline, and the same
// way every time. The file maps a step's ID to its answers:
//
//	{"refund": {"amount": 42.5},
//	 "hotel": {"candidate": "findPetFriendlyHotel", "arguments": {"city": "Oslo"}}}
//
// for a step with holes, an object of its holes' values by argument; for
// a task, the choice (the candidate and its arguments). A step of a
// sub-plan is named with its caller's ID ("research#1/draft"), an element
// of a for each with its index ("tag[2]"), or without it for every
// element ("tag"). The run checks these answers like a model's.
type Script struct {
	steps map[string]any
}

// ParseScript reads a fills file.
func ParseScript(data []byte) (*Script, error) {
	if err := toolkit.CheckUniqueKeys(data); err != nil {
		return nil, fmt.Errorf("a fills file: %w", err)
	}
	v, err := toolkit.DecodeJSON(data)
	if err != nil {
		return nil, fmt.Errorf("a fills file is JSON: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a fills file is an object that maps step IDs to their answers")
	}
	for id, a := range m {
		if _, ok := a.(map[string]any); !ok {
			return nil, fmt.Errorf("the answers of step %s are an object: the values of its holes by argument, or a task's {\"candidate\": …, \"arguments\": {…}}", id)
		}
	}
	return &Script{steps: m}, nil
}

// Fill answers from the file.
func (s *Script) Fill(_ context.Context, req vm.FillRequest) (any, error) {
	entry, ok := s.entry(req.Step)
	if !ok {
		return nil, fmt.Errorf("the fills file has no answer for step %s (it answers %s)", req.Step, strings.Join(s.names(), ", "))
	}
	if req.Argument == "" {
		return entry, nil
	}
	v, ok := entry.(map[string]any)[req.Argument]
	if !ok {
		return nil, fmt.Errorf("the fills file has no answer for argument %s of step %s", req.Argument, req.Step)
	}
	return v, nil
}

// entry returns the answers of a step, or of the for each it is an
// element of.
func (s *Script) entry(step string) (any, bool) {
	if e, ok := s.steps[step]; ok {
		return toolkit.CopyJSON(e), true
	}
	if i := strings.LastIndexByte(step, '['); i > 0 && strings.HasSuffix(step, "]") {
		if e, ok := s.steps[step[:i]]; ok {
			return toolkit.CopyJSON(e), true
		}
	}
	return nil, false
}

func (s *Script) names() []string {
	out := make([]string, 0, len(s.steps))
	for k := range s.steps {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Recorded returns a vm.Filler that asks next and records every answer in
// rec, the recording of the run's tool calls (obelisk run --record).
func Recorded(next vm.Filler, rec *replay.Recorder) vm.Filler {
	return vm.FillerFunc(func(ctx context.Context, req vm.FillRequest) (any, error) {
		v, err := next.Fill(ctx, req)
		if err != nil {
			return nil, err
		}
		tool := req.Tool
		if req.Argument == "" {
			tool = "task"
		}
		if err := rec.RecordFill(req.Step, tool, req.Argument, req.Attempt, v); err != nil {
			return nil, err
		}
		return v, nil
	})
}

// Replayed returns a vm.Filler that gives the answers a recording holds,
// in the order they were recorded, and asks no model.
func Replayed(p *replay.Replayer) vm.Filler {
	return vm.FillerFunc(func(_ context.Context, req vm.FillRequest) (any, error) {
		return p.Fill(req.Step, req.Argument)
	})
}
