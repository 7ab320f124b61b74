package compiler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// A routing hint says who should do a step (seed 000's subagent_hint): a
// researcher, a coder. The operator declares the valid hints and what each
// routes a task to (Config.Hints); a plan only names one. Models invent
// hints (analyst, developer), so a hint is normalised rather than checked:
// a name the operator declares is taken as it is; an alias the operator
// declares, the same name in other case, or a near miss by edit distance
// is taken as the hint it stands for, with a warning; anything else is
// dropped, with a warning. A hint is never an error.

// hintMatch is how a hint a plan names was resolved.
type hintMatch struct {
	// name is the hint it was taken as, "" when it was dropped.
	name string
	// why says how, for the warning: "" for an exact match.
	why string
}

// resolveHint normalises the hint a plan names against the operator's.
func resolveHint(given string, hints map[string]Hint) hintMatch {
	if _, ok := hints[given]; ok {
		return hintMatch{name: given}
	}
	names := hintNames(hints)
	if len(names) == 0 {
		return hintMatch{why: fmt.Sprintf("hint %s is dropped: the operator declares no hints (compiler.Config.Hints), so it routes nothing", given)}
	}
	for _, n := range names {
		for _, a := range hints[n].Aliases {
			if strings.EqualFold(a, given) {
				return hintMatch{name: n, why: fmt.Sprintf("hint %s is taken as %s: the operator declares it an alias of %s", given, n, n)}
			}
		}
	}
	for _, n := range names {
		if strings.EqualFold(n, given) {
			return hintMatch{name: n, why: fmt.Sprintf("hint %s is taken as %s", given, n)}
		}
	}
	if n := lang.Closest(given, names); n != "" {
		return hintMatch{name: n, why: fmt.Sprintf("hint %s is taken as %s, the closest hint the operator declares", given, n)}
	}
	return hintMatch{why: fmt.Sprintf("hint %s is not one the operator declares (%s), so it is dropped and routes nothing", given, strings.Join(names, ", "))}
}

func hintNames(hints map[string]Hint) []string {
	names := make([]string, 0, len(hints))
	for n := range hints {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// targets returns what a hint routes to: its tools, then its sub-plan.
func (h Hint) targets() []string {
	out := append([]string(nil), h.Tools...)
	if h.Plan != "" {
		out = append(out, h.Plan)
	}
	return out
}

// hintOf returns the hint option of a step, or nil.
func hintOf(s *lang.Step) *lang.HintOption {
	for _, o := range s.Options {
		if h, ok := o.(*lang.HintOption); ok {
			return h
		}
	}
	return nil
}

// ParseHints reads an operator's hints file: a JSON object that maps each
// hint to what it routes a task to,
//
//	{"researcher": {"tools": ["webSearch", "readSource"], "aliases": ["analyst"]},
//	 "coder": {"mcp": "github"},
//	 "writer": {"plan": "writeReport"}}
//
// with "tools" (a tool set), "mcp" (the tools of an MCP server, which
// serverTools lists) and "plan" (a sub-plan, by name), one or more of
// them, and "aliases", other names models give the hint.
func ParseHints(data []byte, serverTools func(server string) ([]string, error)) (map[string]Hint, error) {
	if err := toolkit.CheckUniqueKeys(data); err != nil {
		return nil, fmt.Errorf("the hints file: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("a hints file is a JSON object of hints: %w", err)
	}
	out := make(map[string]Hint, len(raw))
	for _, name := range sortedRawKeys(raw) {
		if !lang.IsPlainName(name) {
			return nil, fmt.Errorf("hint %q: a hint is a plain name (letters, digits, _), such as researcher", name)
		}
		var h struct {
			Tools   []string `json:"tools"`
			MCP     string   `json:"mcp"`
			Plan    string   `json:"plan"`
			Aliases []string `json:"aliases"`
		}
		d := json.NewDecoder(bytes.NewReader(raw[name]))
		d.DisallowUnknownFields()
		if err := d.Decode(&h); err != nil {
			return nil, fmt.Errorf("hint %s: %w (a hint has \"tools\", \"mcp\", \"plan\" and \"aliases\")", name, err)
		}
		hint := Hint{Tools: h.Tools, Plan: h.Plan, Aliases: h.Aliases}
		if h.MCP != "" {
			if serverTools == nil {
				return nil, fmt.Errorf("hint %s routes to MCP server %s, and no MCP server is connected", name, h.MCP)
			}
			tools, err := serverTools(h.MCP)
			if err != nil {
				return nil, fmt.Errorf("hint %s: %w", name, err)
			}
			hint.Tools = append(hint.Tools, tools...)
		}
		if len(hint.Tools) == 0 && hint.Plan == "" {
			return nil, fmt.Errorf("hint %s routes to nothing: give it \"tools\", \"mcp\" or \"plan\"", name)
		}
		for _, t := range hint.targets() {
			if !lang.IsToolName(t) {
				return nil, fmt.Errorf("hint %s: %q is not the name of a tool or sub-plan", name, t)
			}
		}
		out[name] = hint
	}
	return out, nil
}

func sortedRawKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
