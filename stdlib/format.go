package stdlib

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
	"unicode/utf8"

	"github.com/obelisk-plan/obelisk/toolkit"
)

// maxFormatWork bounds the work of one text.format call, counted in
// template nodes evaluated (a range's body counts once per element), in
// values formatted and in kilobytes compared or hashed: ten million is
// about half a second of work, and far more than a text a person reads.
const maxFormatWork = 10_000_000

// maxControlActions bounds the actions of a template that open or
// continue a block, and with them how deep its blocks nest: the parser
// and the interpreter recur once for each level, a few kilobytes of stack
// each, and a template nested a few hundred thousand deep would take a
// gigabyte of stack, which ends the process.
const maxControlActions = 10_000

// The functions the rewritten template calls. They are added after the
// template is parsed, so a plan's template cannot name them.
const (
	rangeHook = "_obeliskRange"
	costHook  = "_obeliskCost"
)

// formatter is text.format: Go's text/template, with what a plan's
// template may do bounded, since the plan is not trusted.
//
//   - {{define}}, {{block}} and {{template}} are refused: with them a
//     template can call itself.
//   - The text is written through a writer that refuses more than the
//     body limit.
//   - The strings the template's functions make (print, printf, println,
//     html, js, urlquery), counted together, are bounded by the body
//     limit, and each function refuses before it makes a string that
//     would pass it.
//   - Every range is charged, before its first element, for its length
//     times the nodes of its body; every comparison and index, for the
//     length of the strings it compares or looks up. The work, counted
//     so, is bounded by maxFormatWork, so a template that nests ranges
//     over long lists, or has a {{range 1000000000}}, is refused at once
//     or within that bound, whether or not it writes any text. The
//     charges also watch the call's context: a canceled call stops.
//
// The bounds are enforced by rewriting the parsed template: each range's
// pipeline ends in a call of the range hook, and each argument of a
// comparison or an index that is not a constant goes through the cost
// hook. The template's own functions keep their meaning.
type formatter struct {
	// max bounds the text and the strings made; work bounds the work.
	max, work int64
}

// call is text.format.
func (f formatter) call(ctx context.Context, args map[string]any) (any, error) {
	text := args["template"].(string)
	if n := controlActions(text); n > maxControlActions {
		return nil, &toolkit.Error{Code: toolkit.CodeLimitExceeded, NotRetryable: true,
			Message: fmt.Sprintf("text.format: the template has more than %d {{if}}, {{range}}, {{with}} and {{else}} actions; write a shorter template", maxControlActions)}
	}
	b := &budget{ctx: ctx, maxWork: f.work, maxBytes: f.max}
	tmpl := template.New("format").Option("missingkey=error").Funcs(b.funcs())
	if _, err := tmpl.Parse(text); err != nil {
		return nil, invalid("text.format: %v", err)
	}
	if len(tmpl.Templates()) > 1 || hasTemplateCall(tmpl.Tree.Root) {
		return nil, invalid("text.format: {{define}}, {{block}} and {{template}} are not offered; write the text where it is used")
	}
	rw := &rewriter{hooks: template.FuncMap{costHook: b.cost}, b: b, ranges: map[string]string{}}
	rw.list(tmpl.Tree.Root)
	tmpl.Funcs(rw.hooks)
	out := &cappedWriter{max: f.max}
	err := tmpl.Execute(out, args["values"])
	switch {
	case b.err != nil:
		return nil, b.err
	case out.over:
		return nil, &toolkit.Error{Code: toolkit.CodeLimitExceeded, Message: fmt.Sprintf("text.format: the text is longer than %d bytes; write less, or range over fewer elements", f.max), NotRetryable: true}
	case err != nil:
		return nil, invalid("text.format: %s", rw.unhook(err.Error()))
	}
	return out.b.String(), nil
}

// budget counts the work and the bytes of one call, and keeps its first
// refusal.
type budget struct {
	ctx             context.Context
	work, maxWork   int64
	bytes, maxBytes int64
	err             error
}

// charge counts work and refuses it past the bound, or when the call is
// canceled.
func (b *budget) charge(work int64, what string) error {
	if b.err != nil {
		return b.err
	}
	b.work += work
	if b.work > b.maxWork || work < 0 {
		b.err = &toolkit.Error{Code: toolkit.CodeLimitExceeded, NotRetryable: true,
			Message: fmt.Sprintf("text.format: the template would do more than %d steps of work, stopped at %s; range over fewer elements or nest fewer ranges", b.maxWork, what)}
		return b.err
	}
	if err := b.ctx.Err(); err != nil {
		b.err = err
		return err
	}
	return nil
}

// fits checks, before a function makes a string of at most bound bytes,
// that it fits in what is left of the bytes budget.
func (b *budget) fits(fn string, bound int64) error {
	if b.err != nil {
		return b.err
	}
	if bound > b.maxBytes-b.bytes {
		b.err = &toolkit.Error{Code: toolkit.CodeLimitExceeded, NotRetryable: true,
			Message: fmt.Sprintf("text.format: %s could make more text than the %d bytes the template may make in all; make shorter strings", fn, b.maxBytes)}
		return b.err
	}
	return nil
}

// left returns how many bytes the functions may still make.
func (b *budget) left() int64 { return b.maxBytes - b.bytes }

// made counts a string a function made.
func (b *budget) made(s string) string {
	b.bytes += int64(len(s))
	return s
}

// funcs are the functions that replace text/template's functions that
// make strings: the same, but they check their result's size first.
func (b *budget) funcs() template.FuncMap {
	str := func(name string, fn func(...any) string, grow int64) func(...any) (string, error) {
		return func(args ...any) (string, error) {
			bound, steps := printBound(args, b.left())
			if err := b.charge(steps, name); err != nil {
				return "", err
			}
			if err := b.fits(name, bound*grow); err != nil {
				return "", err
			}
			return b.made(fn(args...)), nil
		}
	}
	return template.FuncMap{
		"print":   str("print", fmt.Sprint, 1),
		"println": str("println", fmt.Sprintln, 1),
		// html and js write a byte as up to 6 bytes, urlquery as 3.
		"html":     str("html", template.HTMLEscaper, 6),
		"js":       str("js", template.JSEscaper, 6),
		"urlquery": str("urlquery", template.URLQueryEscaper, 3),
		"printf": func(format string, args ...any) (string, error) {
			bound, steps := printfBound(format, args, b.left())
			if err := b.charge(steps, "printf"); err != nil {
				return "", err
			}
			if err := b.fits("printf", bound); err != nil {
				return "", err
			}
			return b.made(fmt.Sprintf(format, args...)), nil
		},
	}
}

// cost is the cost hook: it charges for a value a comparison or an index
// reads (a string by its length) and returns it unchanged.
func (b *budget) cost(v any) (any, error) {
	n := int64(1)
	if s, ok := v.(string); ok {
		n += int64(len(s)) >> 10
	}
	return v, b.charge(n, "a comparison or an index")
}

// rangeHook returns the hook of a range whose body has weight nodes: it
// charges for the range's elements and returns the value unchanged.
func (b *budget) rangeHook(weight int64) func(any) (any, error) {
	return func(v any) (any, error) {
		n, what := int64(0), ""
		switch v := v.(type) {
		case []any:
			n, what = int64(len(v)), fmt.Sprintf("a range over %d elements", len(v))
		case map[string]any:
			n, what = int64(len(v)), fmt.Sprintf("a range over %d keys", len(v))
			// The keys are sorted first.
			var keyBytes int64
			for k := range v {
				keyBytes += int64(len(k))
			}
			n += keyBytes * int64(bits.Len(uint(len(v)))) >> 10
		default:
			if i, ok := toInt(v); ok {
				n, what = max(i, 0), fmt.Sprintf("a range over %d", i)
			}
		}
		hi, lo := bits.Mul64(uint64(n), uint64(weight))
		if hi != 0 || lo > 1<<62 {
			lo = 1 << 62
		}
		return v, b.charge(int64(lo), what)
	}
}

// toInt returns an integer value as an int64.
func toInt(v any) (int64, bool) {
	switch v := v.(type) {
	case int:
		return int64(v), true
	case int64:
		return v, true
	case int32:
		return int64(v), true
	case uint64:
		if v > 1<<62 {
			return 1 << 62, true
		}
		return int64(v), true
	}
	return 0, false
}

// printBound bounds the length of fmt.Sprint's or fmt.Sprintln's text of
// args, looking no further than limit, and counts the values it looked
// at.
func printBound(args []any, limit int64) (n, steps int64) {
	z := sizer{num: 32, mult: 1}
	n = int64(len(args)) + 1
	for _, a := range args {
		if n > limit {
			break
		}
		n += z.size(a, limit-n, &steps)
	}
	return n, steps
}

// printfBound bounds the length of fmt.Sprintf's text of a format and
// args, looking no further than limit, and counts the values it looked
// at. It follows fmt's reading of the format: flags, an argument index,
// a width and a precision (either may be * for an argument), the verb;
// each verb's text is bounded by its argument's, padded to the width, a
// number's by its precision, and a string's five times over when the
// verb may quote it or write it in hexadecimal.
func printfBound(format string, args []any, limit int64) (n, steps int64) {
	n = int64(len(format))
	steps = n >> 10
	argNum := 0
	var most struct{ width, prec int64 }
	for i := 0; i < len(format) && n <= limit; i++ {
		if format[i] != '%' {
			continue
		}
		i++
		// fmt's complaints about a directive (%!(BADWIDTH), %!(BADPREC),
		// %!v(BADINDEX), %!(NOVERB), %!v(MISSING)) fit in 64 bytes.
		n += 64
		simple := true // strings written as they are
		for ; i < len(format) && strings.IndexByte("+-# 0", format[i]) >= 0; i++ {
			if format[i] == '#' || format[i] == '+' {
				simple = false
			}
		}
		i = argIndex(format, i, &argNum)
		var width, prec int64
		width, i = formatNumber(format, i, args, &argNum)
		if i < len(format) && format[i] == '.' {
			i = argIndex(format, i+1, &argNum)
			prec, i = formatNumber(format, i, args, &argNum)
		}
		most.width, most.prec = max(most.width, width), max(most.prec, prec)
		i = argIndex(format, i, &argNum)
		if i >= len(format) {
			break
		}
		verb, size := utf8.DecodeRuneInString(format[i:])
		i += size - 1
		if verb == '%' {
			continue
		}
		if verb != 'v' && verb != 's' {
			simple = false
		}
		z := sizer{num: 330 + prec, leaf: width + prec, mult: 1}
		if !simple {
			z.mult = 5
		}
		var v any
		if argNum < len(args) {
			v = args[argNum]
		}
		argNum++
		n += z.size(v, limit-n, &steps)
	}
	// Arguments the format does not use are written after it,
	// %!(EXTRA type=value, …), with what is left of the last directive's
	// width and precision.
	z := sizer{num: 330 + most.prec, leaf: most.width + most.prec, mult: 5}
	for _, a := range args {
		if n > limit {
			break
		}
		n += z.size(a, limit-n, &steps) + 32
	}
	return n, steps
}

// argIndex reads an argument index, [n], at i in a format, and returns
// the index after it.
func argIndex(format string, i int, argNum *int) int {
	if i >= len(format) || format[i] != '[' {
		return i
	}
	end := strings.IndexByte(format[i:], ']')
	if end < 0 {
		return i
	}
	if k, err := strconv.Atoi(format[i+1 : i+end]); err == nil && k >= 1 {
		*argNum = k - 1
	}
	return i + end + 1
}

// formatNumber reads a width or a precision at i in a format: digits, or
// * for the next argument. fmt takes digits up to about ten million and
// an argument up to a million.
func formatNumber(format string, i int, args []any, argNum *int) (int64, int) {
	if i < len(format) && format[i] == '*' {
		var w int64
		if *argNum < len(args) {
			if k, ok := toInt(args[*argNum]); ok {
				w = min(max(k, -k), 1_000_000)
			}
		}
		*argNum++
		return w, i + 1
	}
	var w int64
	for ; i < len(format) && format[i] >= '0' && format[i] <= '9'; i++ {
		w = min(w*10+int64(format[i]-'0'), 10_000_010)
	}
	return w, i
}

// sizer bounds the length of fmt's text of a value.
type sizer struct {
	// num bounds a number's text, leaf is added to every scalar's
	// (padding), and a string's bytes count mult times.
	num, leaf, mult int64
}

// size bounds the text of v, looking no further than limit, and counts
// the values it looks at.
func (z sizer) size(v any, limit int64, steps *int64) int64 {
	*steps++
	switch v := v.(type) {
	case string:
		return int64(len(v))*z.mult + z.leaf + 16
	case []any:
		n := int64(32)
		for _, e := range v {
			if n > limit {
				break
			}
			n += z.size(e, limit-n, steps) + 4
		}
		return n
	case map[string]any:
		n := int64(32)
		for k, e := range v {
			if n > limit {
				break
			}
			n += int64(len(k))*z.mult + z.leaf + 8 + z.size(e, limit-n, steps)
		}
		return n
	case nil, bool:
		return 24 + z.leaf
	case complex64, complex128:
		return 2*z.num + 8 + z.leaf
	}
	return z.num + z.leaf
}

// controlActions counts the actions of a template that may open or
// continue a block ({{if}}, {{range}}, {{with}}, {{else}}, {{block}},
// {{define}}): every "{{" followed by one of those words, wherever it is,
// so that the count is never less than the parser's.
func controlActions(text string) int {
	n := 0
	for {
		i := strings.Index(text, "{{")
		if i < 0 {
			return n
		}
		text = text[i+2:]
		rest := text
		if len(rest) > 1 && rest[0] == '-' && strings.IndexByte(" \t\r\n", rest[1]) >= 0 {
			rest = rest[1:] // a trim marker
		}
		rest = strings.TrimLeft(rest, " \t\r\n")
		for _, word := range []string{"if", "range", "with", "else", "block", "define"} {
			if after, ok := strings.CutPrefix(rest, word); ok && (after == "" || !isWordByte(after[0])) {
				n++
				break
			}
		}
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// cappedWriter keeps up to max bytes and refuses more.
type cappedWriter struct {
	b    strings.Builder
	max  int64
	over bool
}

var errTooLong = errors.New("the text is too long")

func (w *cappedWriter) Write(p []byte) (int, error) {
	if int64(w.b.Len())+int64(len(p)) > w.max {
		w.over = true
		return 0, errTooLong
	}
	return w.b.Write(p)
}

// hasTemplateCall reports whether a tree has a {{template}} action.
func hasTemplateCall(n parse.Node) bool {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return false
		}
		for _, c := range n.Nodes {
			if hasTemplateCall(c) {
				return true
			}
		}
	case *parse.TemplateNode:
		return true
	case *parse.IfNode:
		return hasTemplateCall(n.List) || hasTemplateCall(n.ElseList)
	case *parse.RangeNode:
		return hasTemplateCall(n.List) || hasTemplateCall(n.ElseList)
	case *parse.WithNode:
		return hasTemplateCall(n.List) || hasTemplateCall(n.ElseList)
	}
	return false
}

// rewriter puts the hooks into a parsed template and names the range
// hooks it makes.
type rewriter struct {
	hooks template.FuncMap
	b     *budget
	// ranges holds the pipeline of each range hook, as written.
	ranges map[string]string
}

// list rewrites a list of nodes and returns its weight: the nodes it
// evaluates once, leaving out the bodies of its ranges, which are
// charged by their own hooks.
func (rw *rewriter) list(l *parse.ListNode) int64 {
	if l == nil {
		return 0
	}
	var w int64
	for _, n := range l.Nodes {
		w += rw.node(n)
	}
	return w
}

func (rw *rewriter) node(n parse.Node) int64 {
	switch n := n.(type) {
	case *parse.ActionNode:
		return 1 + rw.pipe(n.Pipe)
	case *parse.IfNode:
		return 1 + rw.pipe(n.Pipe) + rw.list(n.List) + rw.list(n.ElseList)
	case *parse.WithNode:
		return 1 + rw.pipe(n.Pipe) + rw.list(n.List) + rw.list(n.ElseList)
	case *parse.RangeNode:
		w := 1 + rw.pipe(n.Pipe) + rw.list(n.ElseList)
		body := 1 + rw.list(n.List)
		name := rangeHook + strconv.Itoa(len(rw.hooks))
		rw.hooks[name] = rw.b.rangeHook(body)
		rw.ranges[name] = n.Pipe.String()
		n.Pipe.Cmds = append(n.Pipe.Cmds, command(n.Pipe.Position(), name))
		return w
	case *parse.CommentNode:
		return 0
	}
	return 1
}

// pipe rewrites a pipeline and returns its weight.
func (rw *rewriter) pipe(p *parse.PipeNode) int64 {
	if p == nil {
		return 0
	}
	var w int64
	var cmds []*parse.CommandNode
	for i, c := range p.Cmds {
		if i > 0 && costly(c) {
			// The value piped in is the last argument.
			cmds = append(cmds, command(c.Position(), costHook))
		}
		cmds = append(cmds, c)
		w += rw.command(c)
	}
	p.Cmds = cmds
	return w
}

// command rewrites a command and returns its weight.
func (rw *rewriter) command(c *parse.CommandNode) int64 {
	w := int64(1)
	wrap := costly(c)
	for i, a := range c.Args {
		w += rw.arg(a)
		if wrap && i > 0 && !constant(a) {
			c.Args[i] = &parse.PipeNode{NodeType: parse.NodePipe, Pos: a.Position(), Cmds: []*parse.CommandNode{command(a.Position(), costHook, a)}}
		}
	}
	return w
}

func (rw *rewriter) arg(a parse.Node) int64 {
	switch a := a.(type) {
	case *parse.PipeNode:
		return rw.pipe(a)
	case *parse.ChainNode:
		return 1 + rw.arg(a.Node)
	}
	return 1
}

// costly reports whether a command is a comparison or an index, whose
// work grows with the strings it reads.
func costly(c *parse.CommandNode) bool {
	if len(c.Args) == 0 {
		return false
	}
	id, ok := c.Args[0].(*parse.IdentifierNode)
	if !ok {
		return false
	}
	switch id.Ident {
	case "eq", "ne", "lt", "le", "gt", "ge", "index":
		return true
	}
	return false
}

// constant reports whether an argument is a constant of the template.
func constant(a parse.Node) bool {
	switch a.(type) {
	case *parse.BoolNode, *parse.NilNode, *parse.NumberNode, *parse.StringNode:
		return true
	}
	return false
}

// command makes a command that calls the function name with args.
func command(pos parse.Pos, name string, args ...parse.Node) *parse.CommandNode {
	return &parse.CommandNode{NodeType: parse.NodeCommand, Pos: pos, Args: append([]parse.Node{parse.NewIdentifier(name).SetPos(pos)}, args...)}
}

// unhook takes the hooks out of an error message that quotes a rewritten
// action.
func (rw *rewriter) unhook(msg string) string {
	for name, pipe := range rw.ranges {
		msg = strings.ReplaceAll(msg, "<"+name+">", "<"+pipe+">")
	}
	for {
		i := strings.Index(msg, "("+costHook+" ")
		if i < 0 {
			break
		}
		end := closing(msg, i)
		if end < 0 {
			break
		}
		msg = msg[:i] + msg[i+len(costHook)+2:end] + msg[end+1:]
	}
	msg = strings.ReplaceAll(msg, costHook+" | ", "")
	for {
		i := strings.Index(msg, " | "+rangeHook)
		if i < 0 {
			return msg
		}
		j := i + len(" | "+rangeHook)
		for j < len(msg) && msg[j] >= '0' && msg[j] <= '9' {
			j++
		}
		msg = msg[:i] + msg[j:]
	}
}

// closing returns the index of the parenthesis that closes the one at i,
// skipping quoted text, or -1.
func closing(s string, i int) int {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return j
			}
		case '"', '\'':
			q := s[j]
			for j++; j < len(s) && s[j] != q; j++ {
				if s[j] == '\\' {
					j++
				}
			}
		case '`':
			if k := strings.IndexByte(s[j+1:], '`'); k >= 0 {
				j += k + 1
			}
		}
	}
	return -1
}
