package lang

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ParseJSON parses the JSON form of a plan and lowers it to the same tree
// as .plan text. It accepts:
//
//   - a bare array of calls: [{"_tool": "f", "arg": …, "_outputPath": "†state.x"}, …]
//   - a context document: an array of messages {"type": "tool"|"input"|"state"|"plan", …}
//   - a solution: {"calls": [calls…], "output": {…} | null}
//
// A string argument that starts with † (or $state / $input) is a reference;
// {"_expr": "CEL"} is an expression. Comments (// and /* */) and trailing
// commas are accepted. Spans point into the JSON text.
func ParseJSON(name string, src []byte) (*File, Diagnostics) {
	return parseJSONPlan(name, src, true)
}

// parseJSONPlan is ParseJSON. With stream, the calls of a bare array are
// lowered one by one as they are read, and the memory of each call's JSON
// value is reused for the next; without, they are lowered from the whole
// tree, as the other forms are. Both give the same plan.
func parseJSONPlan(name string, src []byte, stream bool) (*File, Diagnostics) {
	c := &jconv{name: name, src: src}
	f := &File{Name: name, JSON: true}
	p := newJSONParser(src)
	if stream {
		// Room for the calls, which each name their tool.
		if n := bytes.Count(src, []byte(`"_tool"`)); n > 0 {
			f.Items = make([]Item, 0, n)
		}
		streamed := false
		p.stream = func(call *jvalue) bool {
			if !streamed && isContextMessage(call) {
				return false
			}
			streamed = true
			if s := c.step(call); s != nil {
				f.Items = append(f.Items, s)
			}
			return true
		}
	}
	root, jerr := p.document()
	if jerr != nil {
		f.Items = nil
		return f, Diagnostics{{Severity: SeverityError, Code: ParseError, File: name,
			Message: "invalid JSON: " + jerr.msg, Span: Span{jerr.pos, jerr.pos}}}
	}
	c.diags = append(c.diags, duplicateKeys(name, p.dups)...)
	f.Span = root.span
	switch {
	case root.kind == jArray && len(root.arr) > 0 && isContextMessage(root.arr[0]):
		c.context(f, root)
	case root.kind == jArray:
		for _, call := range root.arr { // none when they were streamed
			if s := c.step(call); s != nil {
				f.Items = append(f.Items, s)
			}
		}
	case root.kind == jObject && root.get("calls") != nil:
		c.solution(f, root)
	case root.kind == jObject && root.get("type") != nil:
		c.context(f, &jvalue{kind: jArray, arr: []*jvalue{root}, span: root.span})
	default:
		c.errorf(root.span, "not a plan: expected an array of calls (objects with \"_tool\"), an array of context messages (objects with \"type\"), or {\"calls\": […]}")
	}
	c.layout(f)
	c.diags.Sort()
	return f, c.diags
}

// IsJSONPlan reports whether a JSON document has the shape of a plan in
// the JSON form as a model answers with one, whether or not the plan
// checks: a solution ({"calls": […], …}) or an array of calls, whose
// first element is an object with "_tool" or "_task". A context document,
// or any other JSON (an input restated, an example of a result), is not.
// A document that is not valid JSON has that shape when it names a call's
// "_tool" or "_task", so that a plan with a syntax error is still read as
// the plan it was meant to be.
func IsJSONPlan(src []byte) bool {
	root, jerr := newJSONParser(src).document()
	if jerr != nil {
		return bytes.Contains(src, []byte(`"_tool"`)) || bytes.Contains(src, []byte(`"_task"`))
	}
	switch root.kind {
	case jObject:
		return root.get("calls") != nil
	case jArray:
		return len(root.arr) > 0 && (root.arr[0].get("_tool") != nil || root.arr[0].get("_task") != nil)
	}
	return false
}

// isContextMessage reports whether the first element of an array says
// that the array is a context document, not calls.
func isContextMessage(v *jvalue) bool {
	return v.kind == jObject && v.get("type") != nil && v.get("_tool") == nil
}

// ParseTools parses a tools file: an MCP tools/list result ({"tools": […]}),
// an array of MCP tool definitions (name, description, inputSchema,
// outputSchema, annotations), OpenAI function definitions
// ({"type": "function", "function": {name, description, parameters}}), one
// definition, or a context document, whose tool messages it reads. A
// definition may carry an "http" or "command" block saying how the runtime
// calls the tool (ToolDecl.Binding); a plan's own tool messages may not.
func ParseTools(name string, src []byte) ([]*ToolDecl, Diagnostics) {
	c := &jconv{name: name, src: src, bindings: true}
	p := newJSONParser(src)
	root, jerr := p.document()
	if jerr != nil {
		return nil, Diagnostics{{Severity: SeverityError, Code: ImportError, File: name,
			Message: "invalid JSON in tools file: " + jerr.msg, Span: Span{jerr.pos, jerr.pos}}}
	}
	var list []*jvalue
	switch {
	case root.kind == jObject && root.get("tools") != nil:
		if t := root.get("tools"); t.kind == jArray {
			list = t.arr
		} else {
			c.errorf(t.span, "\"tools\" must be an array of tool definitions")
		}
	case root.kind == jArray && len(root.arr) > 0 && root.arr[0].get("type") != nil && root.arr[0].get("name") == nil && root.arr[0].get("function") == nil:
		// A context document: its tool messages.
		for _, m := range root.arr {
			if t := m.get("type"); t != nil && t.kind == jString && t.str == "tool" && m.get("tool") != nil {
				list = append(list, m.get("tool"))
			}
		}
	case root.kind == jArray:
		list = root.arr
	case root.kind == jObject:
		list = []*jvalue{root}
	default:
		c.errorf(root.span, "not a tools file: expected {\"tools\": […]}, an array of tool definitions, or one definition")
	}
	var out []*ToolDecl
	for _, v := range list {
		if d := c.tool(v); d != nil {
			out = append(out, d)
		}
	}
	for _, d := range c.diags {
		d.Code = ImportError
	}
	c.diags = append(c.diags, duplicateKeys(name, p.dups)...)
	c.diags.Sort()
	return out, c.diags
}

// duplicateKeys reports each key an object of a JSON document has twice,
// at its second occurrence.
func duplicateKeys(name string, dups []jsonDup) Diagnostics {
	var out Diagnostics
	for _, d := range dups {
		out = append(out, &Diagnostic{Severity: SeverityError, Code: DuplicateKey, File: name,
			Message: fmt.Sprintf("key %q is given twice in one object", d.key), Span: d.second,
			Related: []Related{{File: name, Span: d.first, Message: "first given here"}},
			Fix:     &Fix{Message: "give the key once: JSON readers disagree on which of the two counts (most keep the last, some the first)"}})
	}
	return out
}

type jconv struct {
	name  string
	src   []byte
	diags Diagnostics
	// bindings allows "http" and "command" blocks in tool definitions:
	// tools files may say how a tool is called, plans may not.
	bindings bool
	// The nodes of calls, allocated in blocks.
	steps   slab[stepMem]
	calls   slab[callMem]
	args    slab[argMem]
	argPtrs slab[*Arg]
	refs    slab[refMem]
	lits    slab[Literal]
}

// stepMem, callMem and argMem hold nodes that go together.
type stepMem struct {
	step Step
	out  Outputs
}

type callMem struct {
	call Call
	tool Ident
}

type argMem struct {
	arg  Arg
	name Ident
}

// slab hands out values of T allocated in blocks, so that the many small
// nodes of a large tree take few allocations. A block stays in memory as
// long as one of its values is used.
type slab[T any] struct {
	free []T
	size int
}

// new returns a zero value.
func (s *slab[T]) new() *T {
	if len(s.free) == 0 {
		s.grow(1)
	}
	v := &s.free[0]
	s.free = s.free[1:]
	return v
}

// run returns n contiguous zero values; appending to the slice copies it.
func (s *slab[T]) run(n int) []T {
	if len(s.free) < n {
		s.grow(n)
	}
	r := s.free[:n:n]
	s.free = s.free[n:]
	return r
}

func (s *slab[T]) grow(n int) {
	s.size = min(max(2*s.size, 8), 256)
	s.free = make([]T, max(s.size, n))
}

func (c *jconv) errorf(span Span, format string, args ...any) {
	c.diags = append(c.diags, &Diagnostic{Severity: SeverityError, Code: ParseError, File: c.name,
		Message: fmt.Sprintf(format, args...), Span: span})
}

// context lowers an array of context messages.
func (c *jconv) context(f *File, root *jvalue) {
	var input *InputDecl
	for _, m := range root.arr {
		typ := m.get("type")
		if m.kind != jObject || typ == nil || typ.kind != jString {
			c.errorf(m.span, "a context message is an object with a \"type\": tool, input, state or plan")
			continue
		}
		switch typ.str {
		case "tool":
			t := m.get("tool")
			if t == nil {
				c.errorf(m.span, "tool message without \"tool\"")
				continue
			}
			if d := c.tool(t); d != nil {
				f.Items = append(f.Items, d)
			}
		case "input":
			if input == nil {
				input = &InputDecl{Span: m.span}
				f.Items = append(f.Items, input)
				f.InputValues = map[string]any{}
			}
			for _, mem := range m.obj {
				if mem.key == "type" {
					continue
				}
				c.numbers(mem.val)
				input.Fields = append(input.Fields, &FieldDecl{
					Span:    mem.keySpan.Join(mem.val.span),
					Name:    &Ident{Span: mem.keySpan, Name: mem.key, Quoted: !isPlainName(mem.key)},
					Type:    inferType(mem.val),
					Default: jsonToExpr(mem.val, false),
				})
				f.InputValues[mem.key] = mem.val.toGo()
			}
		case "state":
			f.Items = append(f.Items, c.state(m))
		case "plan":
			c.planMessage(f, m)
		default:
			c.errorf(typ.span, "unknown context message type %q: use tool, input, state or plan", typ.str)
		}
	}
}

func (c *jconv) state(m *jvalue) *StateDecl {
	d := &StateDecl{Span: m.span}
	byName := map[string]*FieldDecl{}
	if s := m.get("schema"); s != nil {
		d.Fields = newSchemaConv(s).fields(s)
		for _, fd := range d.Fields {
			// A state schema declares slots; "required" has no meaning
			// for them, since writers fill slots as the plan runs.
			fd.Optional = false
			byName[fd.Name.Name] = fd
		}
	}
	for _, mem := range m.obj {
		if mem.key == "type" || mem.key == "schema" {
			continue
		}
		c.numbers(mem.val)
		if fd := byName[mem.key]; fd != nil {
			fd.Default = jsonToExpr(mem.val, false)
			continue
		}
		d.Fields = append(d.Fields, &FieldDecl{
			Span:    mem.keySpan.Join(mem.val.span),
			Name:    &Ident{Span: mem.keySpan, Name: mem.key, Quoted: !isPlainName(mem.key)},
			Type:    inferType(mem.val),
			Default: jsonToExpr(mem.val, false),
		})
	}
	return d
}

var planMessageKeys = []string{"type", "plan", "mode", "output", "onFailure", "maxReplans", "approve"}

func (c *jconv) planMessage(f *File, m *jvalue) {
	for _, mem := range m.obj {
		switch mem.key {
		case "type":
		case "mode":
			if mem.val.kind != jString || (mem.val.str != "eager" && mem.val.str != "lazy") {
				c.errorf(mem.val.span, "\"mode\" is \"eager\" or \"lazy\"")
				continue
			}
			f.Items = append(f.Items, &ModeDecl{Span: mem.val.span, Mode: &Ident{Span: mem.val.span, Name: mem.val.str}})
		case "onFailure":
			if mem.val.kind != jString || !policyActions[mem.val.str] {
				c.errorf(mem.val.span, "\"onFailure\" is \"abort\", \"skip\", \"continue\" or \"replan\"")
				continue
			}
			pd := &PolicyDecl{Span: mem.val.span, Action: &Ident{Span: mem.val.span, Name: mem.val.str}}
			if mr := m.get("maxReplans"); mr != nil && mem.val.str != "replan" {
				c.errorf(mr.span, "\"maxReplans\" bounds replans; it goes only with \"onFailure\": \"replan\"")
			} else if mr != nil {
				if l := jsonLiteral(mr); l != nil && l.Kind == LitInt {
					pd.Max = l
				} else {
					c.errorf(mr.span, "\"maxReplans\" is an integer")
				}
			}
			f.Items = append(f.Items, pd)
		case "maxReplans":
			if m.get("onFailure") == nil {
				c.errorf(mem.keySpan, "\"maxReplans\" needs \"onFailure\": \"replan\"")
			}
		case "approve":
			switch mem.val.kind {
			case jBool:
				if mem.val.b {
					f.Items = append(f.Items, &ApproveDecl{Span: mem.val.span})
				}
			case jString:
				f.Items = append(f.Items, &ApproveDecl{Span: mem.val.span, Message: jsonLiteral(mem.val)})
			default:
				c.errorf(mem.val.span, "\"approve\" is true or a message string")
			}
		case "plan":
			if mem.val.kind != jArray {
				c.errorf(mem.val.span, "\"plan\" is an array of calls")
				continue
			}
			for _, call := range mem.val.arr {
				if s := c.step(call); s != nil {
					f.Items = append(f.Items, s)
				}
			}
		case "output":
			if mem.val.kind != jNull {
				f.Items = append(f.Items, &OutputDecl{Span: mem.val.span, Value: c.expr(mem.val)})
			}
		default:
			c.unknownKey(mem, "plan message", planMessageKeys)
		}
	}
}

func (c *jconv) solution(f *File, root *jvalue) {
	for _, mem := range root.obj {
		switch mem.key {
		case "calls":
			if mem.val.kind != jArray {
				c.errorf(mem.val.span, "\"calls\" is an array of calls")
				continue
			}
			for _, call := range mem.val.arr {
				if s := c.step(call); s != nil {
					f.Items = append(f.Items, s)
				}
			}
		case "output":
			if mem.val.kind != jNull {
				f.Items = append(f.Items, &OutputDecl{Span: mem.val.span, Value: c.expr(mem.val)})
			}
		case "mode":
			c.planMessage(f, &jvalue{kind: jObject, obj: []jmember{mem}, span: root.span})
		default:
			c.unknownKey(mem, "solution", []string{"calls", "output", "mode"})
		}
	}
}

func (c *jconv) unknownKey(mem jmember, where string, known []string) {
	hint := ""
	if s := closest(mem.key, known); s != "" {
		hint = fmt.Sprintf(" (did you mean %q?)", s)
	}
	c.errorf(mem.keySpan, "unknown key %q in %s%s; known keys: %s", mem.key, where, hint, strings.Join(known, ", "))
}

// callKeys are the keys of a call object that are not arguments.
var callKeys = []string{"_tool", "_outputPath", "_output", "_id", "_when", "_expect", "_criterion",
	"_retry", "_backoff", "_timeout", "_fallback", "_approve", "_forEach", "_as", "_max", "_description",
	"_task", "_using", "_hint"}

// step lowers one call object.
func (c *jconv) step(v *jvalue) *Step {
	if v.kind != jObject {
		c.errorf(v.span, "a call is an object with \"_tool\" and its arguments, found %s", v.kind)
		return nil
	}
	tool := v.get("_tool")
	var task *Task
	var call *Call
	switch goal := v.get("_task"); {
	case tool != nil && goal != nil:
		c.errorf(v.span, "a step is a call (\"_tool\") or a task (\"_task\"), not both")
		return nil
	case goal != nil:
		if task = c.task(v, goal); task == nil {
			return nil
		}
	case tool == nil:
		c.errorf(v.span, "call has no \"_tool\": name the tool to call, or give a task its goal in \"_task\"")
		return nil
	default:
		if call = c.call(v, tool); call == nil {
			return nil
		}
	}
	m := c.steps.new()
	s := &m.step
	s.Span, s.Call, s.Task = v.span, call, task
	var retry *RetryOption
	var each *Each
	for _, mem := range v.obj {
		val := mem.val
		switch mem.key {
		case "_tool":
		case "_outputPath":
			if val.kind != jString {
				c.errorf(val.span, "\"_outputPath\" is a string such as \"†state.result\"")
				continue
			}
			if r, ok := plainRefIn(c.refs.new(), val.str, innerSpan(val).Start); ok && !val.escaped && r.IsState() && len(r.Path) == 1 {
				m.out = Outputs{Span: r.Span, Success: r}
				s.Out = &m.out
				continue
			}
			out, diags := parseOutputPathText(c.name, []byte(val.str))
			c.embed(val, out, diags)
			s.Out = out
		case "_output":
			s.Options = append(s.Options, &ResultOption{Span: mem.keySpan.Join(val.span), Value: c.expr(val)})
		case "_id":
			if val.kind != jString || !isPlainName(val.str) {
				c.errorf(val.span, "\"_id\" is a plain name (letters, digits, _)")
				continue
			}
			s.Label = &Ident{Span: val.span, Name: val.str}
		case "_when", "_expect":
			e := c.exprString(val, mem.key)
			if e == nil {
				continue
			}
			if mem.key == "_when" {
				s.Options = append(s.Options, &WhenOption{Span: mem.keySpan.Join(val.span), Cond: e})
			} else {
				s.Options = append(s.Options, &ExpectOption{Span: mem.keySpan.Join(val.span), Cond: e})
			}
		case "_criterion":
			if val.kind != jString {
				c.errorf(val.span, "\"_criterion\" is a sentence for an evaluator to judge")
				continue
			}
			s.Options = append(s.Options, &ExpectOption{Span: mem.keySpan.Join(val.span), Cond: jsonLiteral(val)})
		case "_retry":
			l := jsonLiteral(val)
			if l == nil || l.Kind != LitInt {
				c.errorf(val.span, "\"_retry\" is an integer")
				continue
			}
			retry = &RetryOption{Span: mem.keySpan.Join(val.span), Count: l}
			s.Options = append(s.Options, retry)
		case "_backoff":
			if v.get("_retry") == nil {
				c.errorf(mem.keySpan, "\"_backoff\" needs \"_retry\"")
			}
		case "_timeout":
			if d := c.duration(val, "_timeout"); d != nil {
				s.Options = append(s.Options, &TimeoutOption{Span: mem.keySpan.Join(val.span), Duration: d})
			}
		case "_fallback":
			ft := val.get("_tool")
			if val.kind != jObject || ft == nil {
				c.errorf(val.span, "\"_fallback\" is a call: {\"_tool\": …, arguments…}")
				continue
			}
			for _, fm := range val.obj {
				if strings.HasPrefix(fm.key, "_") && fm.key != "_tool" {
					c.errorf(fm.keySpan, "a fallback call takes only \"_tool\" and arguments; it writes the step's output paths")
				}
			}
			if fc := c.call(val, ft); fc != nil {
				s.Options = append(s.Options, &FallbackOption{Span: mem.keySpan.Join(val.span), Call: fc})
			}
		case "_approve":
			switch val.kind {
			case jBool:
				if val.b {
					s.Options = append(s.Options, &ApproveOption{Span: mem.keySpan.Join(val.span)})
				}
			case jString:
				s.Options = append(s.Options, &ApproveOption{Span: mem.keySpan.Join(val.span), Message: jsonLiteral(val)})
			default:
				c.errorf(val.span, "\"_approve\" is true or a message string")
			}
		case "_forEach":
			e := c.exprString(val, "_forEach")
			if e == nil {
				continue
			}
			each = &Each{Span: mem.keySpan.Join(val.span), List: e, Var: &Ident{Span: val.span, Name: "item"}}
			s.Each = each
		case "_as", "_max":
			if v.get("_forEach") == nil {
				c.errorf(mem.keySpan, "%q needs \"_forEach\"", mem.key)
			}
		case "_description":
			if val.kind == jString {
				s.Leading = docComments(val.str)
			}
		case "_task":
		case "_using":
			if task == nil {
				c.errorf(mem.keySpan, "\"_using\" lists the candidates of a task: it needs \"_task\"")
			}
		case "_hint":
			if val.kind != jString || val.str == "" {
				c.errorf(val.span, "\"_hint\" names who should do the step, a string such as \"researcher\"")
				continue
			}
			s.Options = append(s.Options, &HintOption{Span: mem.keySpan.Join(val.span), Name: &Ident{Span: innerSpan(val), Name: val.str, Quoted: !isPlainName(val.str)}})
		default:
			if strings.HasPrefix(mem.key, "_") {
				c.unknownKey(mem, "call", callKeys)
			}
		}
	}
	if retry != nil {
		if b := v.get("_backoff"); b != nil {
			retry.Backoff = c.duration(b, "_backoff")
		}
	}
	if each != nil && task != nil {
		c.errorf(v.get("_forEach").span, "a task cannot run for each element: a model chooses one candidate for one task; give \"_forEach\" to a call of a tool, or drop it")
		return nil
	}
	if each != nil {
		if as := v.get("_as"); as != nil {
			if as.kind != jString || !isPlainName(as.str) {
				c.errorf(as.span, "\"_as\" is a plain name for the element")
			} else {
				each.Var = &Ident{Span: as.span, Name: as.str}
			}
		}
		if mx := v.get("_max"); mx != nil {
			if l := jsonLiteral(mx); l != nil && l.Kind == LitInt {
				each.Max = l
			} else {
				c.errorf(mx.span, "\"_max\" is an integer")
			}
		}
	}
	return s
}

// call lowers the tool name and the arguments (the keys without "_") of a
// call object.
func (c *jconv) call(v, tool *jvalue) *Call {
	if tool.kind != jString {
		c.errorf(tool.span, "\"_tool\" is the tool's name, a string")
		return nil
	}
	name := tool.str
	if !isToolName(name) {
		c.errorf(tool.span, "%q is not a tool name: use letters, digits and _, joined by . or -", name)
		return nil
	}
	cm := c.calls.new()
	cm.tool = Ident{Span: innerSpan(tool), Name: name}
	call := &cm.call
	call.Span, call.Tool = v.span, &cm.tool
	n := 0
	for _, mem := range v.obj {
		if !strings.HasPrefix(mem.key, "_") {
			n++
		}
	}
	if n == 0 {
		return call
	}
	args := c.args.run(n)
	call.Args = c.argPtrs.run(n)[:0]
	for _, mem := range v.obj {
		if strings.HasPrefix(mem.key, "_") {
			continue
		}
		a := &args[len(call.Args)]
		a.name = Ident{Span: mem.keySpan, Name: mem.key, Quoted: !isPlainName(mem.key)}
		val := c.hole(mem.val)
		if val == nil {
			val = c.expr(mem.val)
		}
		a.arg = Arg{Span: mem.keySpan.Join(mem.val.span), Name: &a.name, Value: val}
		call.Args = append(call.Args, &a.arg)
	}
	return call
}

// task lowers a task object: its goal ("_task") and its candidates
// ("_using"). A task has no arguments: the model fills those of the
// candidate it chooses.
func (c *jconv) task(v, goal *jvalue) *Task {
	if goal.kind != jString || strings.TrimSpace(goal.str) == "" {
		c.errorf(goal.span, "\"_task\" is the task's goal, a sentence that says what the step must achieve")
		return nil
	}
	lit := jsonLiteral(goal)
	refs, diags := TextRefs(c.name, lit, !goal.escaped)
	c.diags = append(c.diags, diags...)
	t := &Task{Span: v.span, Goal: lit, Refs: refs}
	for _, mem := range v.obj {
		if !strings.HasPrefix(mem.key, "_") {
			c.errorf(mem.keySpan, "a task takes no arguments: the model fills the arguments of the candidate it chooses; remove %q, or call the tool with \"_tool\"", mem.key)
			return nil
		}
	}
	using := v.get("_using")
	if using == nil {
		return t
	}
	if using.kind != jArray {
		c.errorf(using.span, "\"_using\" is a list of the names of tools and sub-plans: [\"findHotel\", \"bookHotel\"]")
		return nil
	}
	t.Using = []*Ident{}
	for _, e := range using.arr {
		if e.kind != jString || !isToolName(e.str) {
			c.errorf(e.span, "a candidate of a task is the name of a tool or sub-plan: letters, digits and _, joined by . or -")
			return nil
		}
		t.Using = append(t.Using, &Ident{Span: innerSpan(e), Name: e.str})
	}
	return t
}

// isToolName reports whether s can be written as a tool name in .plan text.
func isToolName(s string) bool {
	// Names joined by single dots or hyphens: every part between them,
	// and before the first and after the last, is a plain name.
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' || s[i] == '-' {
			if !isPlainName(s[start:i]) {
				return false
			}
			start = i + 1
		}
	}
	return true
}

// innerSpan is the span of a string's contents, without its quotes.
func innerSpan(v *jvalue) Span {
	if v.kind != jString || v.span.End.Offset-v.span.Start.Offset < 2 {
		return v.span
	}
	s := v.span
	s.Start.Offset++
	s.Start.Column++
	s.End.Offset--
	s.End.Column--
	return s
}

func (c *jconv) duration(v *jvalue, key string) *Literal {
	if v.kind != jString {
		c.errorf(v.span, "%q is a duration string such as \"500ms\" or \"10s\"", key)
		return nil
	}
	d, err := parseDuration(v.str)
	if err != nil {
		c.errorf(v.span, "%s", err)
		return nil
	}
	if d < 0 {
		c.errorf(v.span, "%q is negative: a duration is 0 or more", key)
		return nil
	}
	// Raw stays empty: the printer writes the duration canonically ("0"
	// and "1.5s" are valid Go durations but "0" is not a .plan duration).
	return &Literal{Span: v.span, Kind: LitDuration, Value: d}
}

// exprString parses a JSON string as an expression (CEL or a value).
func (c *jconv) exprString(v *jvalue, key string) Expr {
	switch v.kind {
	case jBool:
		return jsonLiteral(v)
	case jString:
		e, diags := ParseExpr(c.name, []byte(v.str))
		c.embed(v, e, diags)
		return e
	}
	c.errorf(v.span, "%q is an expression, written as a string", key)
	return nil
}

// expr lowers a JSON value used as an argument or result: strings starting
// with † are references, {"_expr": "…"} is CEL.
func (c *jconv) expr(v *jvalue) Expr {
	switch v.kind {
	case jString:
		if isRefString(v.str) {
			if !v.escaped {
				if r, ok := plainRefIn(c.refs.new(), v.str, innerSpan(v).Start); ok {
					return r
				}
			}
			r, diags := ParseRef(c.name, []byte(v.str))
			c.embed(v, r, diags)
			if r == nil {
				return &Literal{Span: v.span, Kind: LitString, Value: v.str}
			}
			return r
		}
	case jArray:
		l := &ListExpr{Span: v.span}
		for _, e := range v.arr {
			l.Elems = append(l.Elems, c.expr(e))
		}
		return l
	case jObject:
		if len(v.obj) == 1 && v.obj[0].key == "_expr" {
			if e := c.exprString(v.obj[0].val, "_expr"); e != nil {
				return e
			}
		}
		if len(v.obj) == 1 && v.obj[0].key == "_hole" {
			c.errorf(v.span, "a hole, {\"_hole\": \"instruction\"}, is the whole value of an argument of a call: it cannot be part of a list, an object or a result")
		}
		o := &ObjectExpr{Span: v.span}
		for _, m := range v.obj {
			o.Fields = append(o.Fields, &ObjectField{
				Span:  m.keySpan.Join(m.val.span),
				Key:   &Ident{Span: m.keySpan, Name: m.key, Quoted: !isPlainName(m.key)},
				Value: c.expr(m.val),
			})
		}
		return o
	}
	c.numbers(v)
	return literalIn(c.lits.new(), v)
}

// hole lowers an argument's value written {"_hole": "instruction"}, or
// returns nil for any other value.
func (c *jconv) hole(v *jvalue) Expr {
	if v.kind != jObject || len(v.obj) != 1 || v.obj[0].key != "_hole" {
		return nil
	}
	ins := v.obj[0].val
	if ins.kind != jString || strings.TrimSpace(ins.str) == "" {
		c.errorf(ins.span, "\"_hole\" is the instruction for the model that fills the argument, a sentence such as \"the refundable amount from †state.history\"")
		return &Literal{Span: v.span, Kind: LitNull}
	}
	lit := jsonLiteral(ins)
	refs, diags := TextRefs(c.name, lit, !ins.escaped)
	c.diags = append(c.diags, diags...)
	return &HoleExpr{Span: v.span, Instruction: lit, Refs: refs}
}

// numbers reports the integers of a value, an argument, an input or an
// initial value, that are beyond the range of an int64: taken as doubles,
// they would not be the numbers written.
func (c *jconv) numbers(v *jvalue) {
	switch v.kind {
	case jNumber:
		if !strings.ContainsAny(v.str, ".eE") {
			if _, err := strconv.ParseInt(v.str, 10, 64); err != nil {
				c.errorf(v.span, "%s", intRangeMessage(v.str))
			}
		}
	case jArray:
		for _, e := range v.arr {
			c.numbers(e)
		}
	case jObject:
		for _, m := range v.obj {
			c.numbers(m.val)
		}
	}
}

// isRefString reports whether a JSON string is a reference: it starts with
// †, or with $state or $input followed by '.' or '['.
func isRefString(s string) bool {
	if strings.HasPrefix(s, "†") {
		return true
	}
	for _, root := range []string{"$state", "$input"} {
		if rest, ok := strings.CutPrefix(s, root); ok && (strings.HasPrefix(rest, ".") || strings.HasPrefix(rest, "[")) {
			return true
		}
	}
	return false
}

// embed moves a node parsed from the text of a JSON string, and its
// diagnostics, to the string's place in the JSON source. Without escapes
// every offset maps exactly; with escapes, everything maps to the string.
func (c *jconv) embed(v *jvalue, n Node, diags Diagnostics) {
	base := innerSpan(v).Start
	f := func(s Span) Span {
		if v.escaped {
			return v.span
		}
		return Span{shiftPos(s.Start, base), shiftPos(s.End, base)}
	}
	if n != nil && !isNilNode(n) {
		mapSpans(n, f)
	}
	for _, d := range diags {
		d.File = c.name
		d.Span = f(d.Span)
		c.diags = append(c.diags, d)
	}
}

func shiftPos(p, base Pos) Pos {
	return Pos{Offset: base.Offset + p.Offset, Line: base.Line, Column: base.Column + p.Column - 1}
}

// jsonToExpr lowers a JSON value to a literal, list or object, without
// reading references out of strings (defaults and initial values are data).
func jsonToExpr(v *jvalue, _ bool) Expr {
	switch v.kind {
	case jArray:
		l := &ListExpr{Span: v.span}
		for _, e := range v.arr {
			l.Elems = append(l.Elems, jsonToExpr(e, false))
		}
		return l
	case jObject:
		o := &ObjectExpr{Span: v.span}
		for _, m := range v.obj {
			o.Fields = append(o.Fields, &ObjectField{
				Span:  m.keySpan.Join(m.val.span),
				Key:   &Ident{Span: m.keySpan, Name: m.key, Quoted: !isPlainName(m.key)},
				Value: jsonToExpr(m.val, false),
			})
		}
		return o
	}
	return jsonLiteral(v)
}

// inferType returns the type of a JSON value, for input and state given by
// value.
func inferType(v *jvalue) TypeExpr {
	switch v.kind {
	case jBool:
		return &NamedType{Span: v.span, Name: "bool"}
	case jString:
		return &NamedType{Span: v.span, Name: "string"}
	case jNumber:
		if jsonLiteral(v).Kind == LitInt {
			return &NamedType{Span: v.span, Name: "int"}
		}
		return &NamedType{Span: v.span, Name: "number"}
	case jArray:
		var elem TypeExpr
		for _, e := range v.arr {
			t := inferType(e)
			if elem == nil {
				elem = t
			} else if FormatType(elem) != FormatType(t) {
				if FormatType(elem) == "int" && FormatType(t) == "number" || FormatType(elem) == "number" && FormatType(t) == "int" {
					elem = &NamedType{Span: v.span, Name: "number"}
				} else {
					elem = &NamedType{Span: v.span, Name: "any"}
					break
				}
			}
		}
		if elem == nil {
			elem = &NamedType{Span: v.span, Name: "any"}
		}
		return &ListType{Span: v.span, Elem: elem}
	case jObject:
		if len(v.obj) == 0 {
			return &NamedType{Span: v.span, Name: "object"}
		}
		o := &ObjectType{Span: v.span}
		for _, m := range v.obj {
			o.Fields = append(o.Fields, &FieldDecl{
				Span: m.keySpan.Join(m.val.span),
				Name: &Ident{Span: m.keySpan, Name: m.key, Quoted: !isPlainName(m.key)},
				Type: inferType(m.val),
			})
		}
		return o
	}
	return &NamedType{Span: v.span, Name: "any"}
}

// tool lowers a tool definition: an MCP tool, an OpenAI function, or a
// string naming a tool the environment provides ("Tool.name" or "name").
func (c *jconv) tool(v *jvalue) *ToolDecl {
	if v.kind == jString {
		name := strings.TrimPrefix(v.str, "Tool.")
		if !isToolName(name) {
			c.errorf(v.span, "%q is not a tool name", v.str)
			return nil
		}
		return &ToolDecl{Span: v.span, Name: &Ident{Span: innerSpan(v), Name: name}}
	}
	if v.kind != jObject {
		c.errorf(v.span, "a tool definition is an object with name, description and inputSchema")
		return nil
	}
	def := v
	if fn := v.get("function"); fn != nil && fn.kind == jObject {
		def = fn // OpenAI: {"type": "function", "function": {…}}
	}
	nv := def.get("name")
	if nv == nil || nv.kind != jString {
		c.errorf(def.span, "tool definition without a \"name\"")
		return nil
	}
	if !isToolName(nv.str) {
		c.errorf(nv.span, "tool name %q cannot be called from a plan: use letters, digits and _, joined by . or -", nv.str)
		return nil
	}
	d := &ToolDecl{Span: v.span, Name: &Ident{Span: innerSpan(nv), Name: nv.str}, HasSignature: true}
	if desc := def.get("description"); desc != nil && desc.kind == jString {
		d.Leading = docComments(desc.str)
	}
	in := def.get("inputSchema")
	for _, k := range []string{"parameters", "input_schema"} {
		if in == nil {
			in = def.get(k)
		}
	}
	if in != nil {
		if in.kind != jObject {
			c.errorf(in.span, "a tool's input schema is a JSON Schema object")
		} else {
			if t := in.get("type"); t != nil && (t.kind != jString || t.str != "object") {
				c.errorf(t.span, "a tool's input schema must have type \"object\": its properties are the parameters")
			}
			d.Params = newSchemaConv(in).fields(in)
			d.InputSchema = slices.Clone(c.src[in.span.Start.Offset:in.span.End.Offset])
		}
	}
	if out := def.get("outputSchema"); out != nil {
		d.Result = newSchemaConv(out).typeOf(out)
		d.OutputSchema = slices.Clone(c.src[out.span.Start.Offset:out.span.End.Offset])
	}
	if ann := def.get("annotations"); ann != nil && ann.kind == jObject {
		d.Attrs = c.annotations(ann)
	}
	for _, kind := range []string{"http", "command"} {
		b := def.get(kind)
		switch {
		case b == nil:
		case !c.bindings:
			c.errorf(b.span, "a plan cannot say how a tool is called: move the %q block of %s to a tools file: the operator's (compiler.Config.Tools), or one the plan imports", kind, nv.str)
		case b.kind != jObject:
			c.errorf(b.span, "%q is an object saying how %s is called", kind, nv.str)
		case d.Binding != nil:
			c.errorf(b.span, "%s has both an \"http\" and a \"command\" block: keep one", nv.str)
		default:
			d.Binding = &ToolBinding{Span: b.span, Kind: kind, File: c.name, JSON: slices.Clone(c.src[b.span.Start.Offset:b.span.End.Offset])}
		}
	}
	return d
}

// IsToolName reports whether s can name a tool in a plan: identifiers
// joined by . or -.
func IsToolName(s string) bool { return isToolName(s) }

// annotations maps MCP tool annotations to attributes: readOnlyHint means
// pure; destructiveHint means irreversible; otherwise idempotentHint means
// idempotent; otherwise destructiveHint: false, which MCP defines as a tool
// that makes additive updates only (it destroys nothing, and may add
// again when called again), is idempotent too, the weakest effect that has
// side effects, since nothing it does needs undoing; with none of these
// the tool is irreversible. The Obelisk hints latency ("300ms"), tokens
// (an integer), model (true) and effect ("pure" | "idempotent" |
// "irreversible") are read too.
func (c *jconv) annotations(ann *jvalue) []*ToolAttr {
	flag := func(k string) (bool, bool) {
		v := ann.get(k)
		if v == nil || v.kind != jBool {
			return false, false
		}
		return v.b, true
	}
	attr := func(name string, span Span, val *Literal) *ToolAttr {
		return &ToolAttr{Span: span, Name: &Ident{Span: span, Name: name}, Value: val}
	}
	var out []*ToolAttr
	effect := ""
	if ro, _ := flag("readOnlyHint"); ro {
		effect = "pure"
	} else if de, ok := flag("destructiveHint"); ok && de {
		effect = "irreversible"
	} else if id, _ := flag("idempotentHint"); id {
		effect = "idempotent"
	} else if ok {
		effect = "idempotent" // destructiveHint: false: additive updates only
	}
	if e := ann.get("effect"); e != nil {
		if e.kind == jString && (e.str == "pure" || e.str == "idempotent" || e.str == "irreversible") {
			effect = e.str
		} else {
			c.errorf(e.span, "\"effect\" is \"pure\", \"idempotent\" or \"irreversible\"")
		}
	}
	if effect != "" {
		out = append(out, attr(effect, ann.span, nil))
	}
	if m, _ := flag("model"); m {
		out = append(out, attr("model", ann.span, nil))
	}
	if l := ann.get("latency"); l != nil {
		if d := c.duration(l, "latency"); d != nil {
			out = append(out, attr("latency", l.span, d))
		}
	}
	if t := ann.get("tokens"); t != nil {
		if lit := jsonLiteral(t); lit != nil && lit.Kind == LitInt {
			out = append(out, attr("tokens", t.span, lit))
		} else {
			c.errorf(t.span, "\"tokens\" is an integer")
		}
	}
	return out
}

// layout decides the multi-line layout of calls read from JSON, which has
// none: a call whose line (label, call and output paths, as the printer
// writes them on one line) is longer than 100 bytes is written one
// argument per line. Sections (tools, input and state, steps, output) are
// separated by a blank line.
func (c *jconv) layout(f *File) {
	pr := &printer{} // its buffer is reused for every step
	for i, it := range f.Items {
		if s, ok := it.(*Step); ok && s.Call != nil && len(s.Call.Args) > 1 {
			pr.b.Reset()
			pr.step(s, 0)
			line := pr.b.Bytes()
			if i := bytes.IndexByte(line, '\n'); i >= 0 {
				line = line[:i]
			}
			if len(line) > 100 {
				s.Call.Multiline = true
			}
		}
		if i > 0 && section(it) != section(f.Items[i-1]) {
			// The blank line goes before the item's description, if any.
			if m := it.Meta(); len(m.Leading) > 0 {
				m.Leading[0].BlankBefore = true
			} else {
				m.BlankBefore = true
			}
		}
	}
}

func section(it Item) int {
	switch it.(type) {
	case *ModeDecl, *PolicyDecl, *ApproveDecl:
		return 0
	case *ImportDecl, *TypeDecl, *ToolDecl:
		return 1
	case *InputDecl, *StateDecl:
		return 2
	case *Step:
		return 3
	}
	return 4
}

// closest returns the candidate nearest to s by edit distance, if it is
// near enough to be a likely misspelling, or "".
func closest(s string, candidates []string) string {
	// A likely misspelling is at most one edit (a swap of two neighbours
	// counts as one) for every three characters.
	best, bestD := "", max(1, utf8.RuneCountInString(s)/3)+1
	sorted := slices.Clone(candidates)
	sort.Strings(sorted)
	for _, cand := range sorted {
		if d := editDistance(strings.ToLower(s), strings.ToLower(cand)); d < bestD {
			best, bestD = cand, d
		}
	}
	return best
}

// Closest returns the candidate nearest to s by edit distance when it is
// close enough to be a likely misspelling, or "". Ties go to the
// alphabetically first candidate.
func Closest(s string, candidates []string) string { return closest(s, candidates) }

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and swaps of two neighbouring characters.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
