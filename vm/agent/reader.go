package agent

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"sync"

	"github.com/obelisk-plan/obelisk/lang"
)

// answerReader reads the plan out of a model's answer as the answer
// streams in. Models wrap plans in many ways: a Markdown code block with
// any tag (or none), a sentence before and after it, a <think> or
// <reasoning> block before it (local reasoning models), or a plan written
// without a fence after a sentence. The reader passes on the plan's text
// and turns every other line into an empty line, so that the lines of
// what it gives are the lines of the answer, and diagnostics on the plan
// point at the model's own lines.
//
// An answer may have several code blocks, only one of them the plan: a
// block restating the input in JSON, then the plan in another. The reader
// takes the first block that is a plan, and sets the others aside. A block
// tagged plan or obelisk is the plan. Any other block is held until it
// shows whether it is: a block whose first line that is neither blank nor
// a comment starts a statement of plan text (and whose tag is not json) is
// the plan from that line on; any other block is read whole when it
// closes, and is the plan when it is a plan in the JSON form
// (lang.IsJSONPlan) or plan text that parses. Nothing of a block is passed
// on before it is known to be the plan, so eager mode never runs a
// statement of a block that is not. At most maxHeldBlock bytes of a block
// are held: a longer block that has not shown itself the plan is not.
// Once the plan's block closes, a later block of the same tag goes on
// with the plan when it is plan text too; the other blocks are dropped.
// When no block is the plan, missed names the blocks set aside.
//
// In eager mode each statement runs as soon as it is complete, so the
// reader holds back as little as it can: inside the plan's code block it
// holds only a line that starts with a backquote or a tilde (which may
// close the block), and in a plan without a fence only a line whose first
// character cannot start a statement (an upper-case letter, a list
// marker, a digit, '<'), until its end shows whether it is prose. Before
// the plan starts, each line is held until its end.
type answerReader struct {
	r     io.Reader
	buf   []byte
	out   bytes.Buffer
	state readerState
	line  []byte // the held part of the current line
	// mode of the current line: how its bytes are treated.
	mode lineMode
	// fence is the opening fence of the code block being read ("```",
	// "~~~~"), tag its tag, json whether the block's plan is JSON.
	fence, tag string
	json       bool
	// want tells whether a whole block is what the reader looks for;
	// text, whether a block of text may be taken at its first line that
	// starts a statement.
	want blockTest
	text bool
	// block holds the lines of a block not known yet to be the plan;
	// first is its first line that is not blank, started whether it has
	// one that is neither blank nor a comment, and blockJSON whether that
	// line starts JSON. after is set when the block follows the plan's.
	block          []byte
	first          string
	started, after bool
	blockJSON      bool
	resume         readerState // the state after a block that is skipped
	taken          bool        // some of the answer was taken as the plan
	setAside       missedBlocks
	// closeTag ends the reasoning block being skipped.
	closeTag string
	// seen is set once some of the plan has been passed on.
	seen bool
	// depth of brackets in the plan passed on, and the lexical state of
	// its current line (a string and its quote, an escape, a comment).
	depth   int
	quote   byte
	escaped bool
	comment bool
	err     error
}

type readerState int

const (
	beforePlan readerState = iota // prose, reasoning: nothing of the plan yet
	reasoning                     // inside <think>…</think>
	fenced                        // inside the plan's code block
	held                          // inside a code block that may be the plan
	skipped                       // inside a code block that is not the plan
	afterBlock                    // after the plan's code block: prose, or another block
	plain                         // a plan written without a fence
	jsonPlan                      // a JSON plan written without a fence
	finished                      // after the plan: the rest is dropped
)

type lineMode int

const (
	atStart  lineMode = iota // nothing of the line read yet
	holding                  // the line is held until its end
	passing                  // the line is the plan's: passed on as it comes
	dropping                 // the line is not the plan's: dropped
)

// blockTest tells whether the whole text of a code block is what a reader
// looks for; json reports that the block starts as JSON.
type blockTest func(text []byte, json bool) bool

// isPlanBlock reports whether a code block holds a plan: in the JSON form,
// or plan text that parses.
func isPlanBlock(text []byte, json bool) bool {
	if json {
		return lang.IsJSONPlan(text)
	}
	f, diags := lang.Parse("block.plan", text)
	return !diags.HasErrors() && len(f.Items) > 0
}

// isJSONBlock reports whether a code block holds JSON.
func isJSONBlock(_ []byte, json bool) bool { return json }

// maxHeldBlock bounds what the reader holds of a code block before it
// knows whether the block is the plan.
const maxHeldBlock = 1 << 20

// newAnswerReader returns a reader of the plan in the answer r streams.
func newAnswerReader(r io.Reader) *answerReader {
	return &answerReader{r: r, buf: make([]byte, 4096), want: isPlanBlock, text: true}
}

// readAnswer returns the plan in a whole answer, as newAnswerReader reads
// it, and the code blocks set aside when none of them is the plan.
func readAnswer(answer string) (string, missedBlocks) {
	a := newAnswerReader(strings.NewReader(answer))
	b, _ := io.ReadAll(a)
	return string(b), a.missed()
}

// readJSONAnswer returns the JSON document in a whole answer (an
// evaluator's verdict): the first code block that holds JSON, or JSON
// written without a fence.
func readJSONAnswer(answer string) string {
	a := &answerReader{r: strings.NewReader(answer), buf: make([]byte, 4096), want: isJSONBlock}
	b, _ := io.ReadAll(a)
	return string(b)
}

// missedBlocks are the code blocks of an answer set aside when none of
// them is the plan: how many, and the first few, each as its tag and the
// start of its first line that is not blank.
type missedBlocks struct {
	n     int
	shown []string
}

// The most blocks missedBlocks names, and the most characters of each
// one's first line.
const (
	missedShown = 4
	missedLine  = 60
)

func (m *missedBlocks) add(tag, first string) {
	m.n++
	if len(m.shown) == missedShown {
		return
	}
	if r := []rune(first); len(r) > missedLine {
		first = string(r[:missedLine]) + "…"
	}
	what := "```" + tag
	if first == "" {
		what += " (empty)"
	} else {
		what += ", first line: " + first
	}
	m.shown = append(m.shown, what)
}

// missed returns the code blocks set aside when no part of the answer
// was taken as the plan.
func (a *answerReader) missed() missedBlocks {
	if a.taken {
		return missedBlocks{}
	}
	return a.setAside
}

func (a *answerReader) Read(p []byte) (int, error) {
	for a.out.Len() == 0 && a.err == nil {
		n, err := a.r.Read(a.buf)
		for _, c := range a.buf[:n] {
			a.feed(c)
		}
		if err != nil {
			for a.mode == holding {
				line := a.line
				a.line, a.mode = nil, atStart
				a.decide(line, false)
			}
			if a.state == held {
				a.settle() // a block the answer never closes
			}
			a.err = err
		}
	}
	if a.out.Len() > 0 {
		return a.out.Read(p)
	}
	return 0, a.err
}

// feed takes one byte of the answer.
func (a *answerReader) feed(c byte) {
	if a.mode == atStart {
		a.mode = a.startLine(c)
	}
	if a.mode == holding && c == '{' && a.state == beforePlan && strings.TrimSpace(string(a.line)) == "" {
		// A JSON plan: it is passed on from its first brace, for a
		// plan written on one line runs call by call too.
		line := a.line
		a.line, a.mode, a.state, a.taken = nil, passing, jsonPlan, true
		a.emit(line)
	}
	switch a.mode {
	case holding:
		a.line = append(a.line, c)
		if c == '\n' {
			line := a.line
			a.line, a.mode = nil, atStart
			a.decide(line, true)
		}
		return
	case passing:
		a.pass(c)
	case dropping:
		if c == '\n' {
			a.out.WriteByte('\n')
		}
	}
	if c == '\n' {
		a.mode = atStart
	}
}

// startLine chooses how to read a line from its first byte.
func (a *answerReader) startLine(c byte) lineMode {
	switch a.state {
	case finished:
		return dropping
	case fenced:
		if c == '`' || c == '~' || !a.seen {
			return holding // a closing fence, or the block's first line
		}
		return passing
	case skipped:
		if c == '`' || c == '~' {
			return holding // a closing fence
		}
		return dropping
	case jsonPlan:
		return passing
	case plain:
		if a.depth > 0 || a.quote != 0 {
			return passing
		}
		switch {
		case c == ' ', c == '\t', c == '\r', c == '\n', c == '#', c == '_', c == '}', c == ')', c == ']', c == '"', c == '\'':
			return passing
		case c >= 'a' && c <= 'z', c >= 0x80 && c != 0xe2:
			// A lower-case name starts a statement; so may a
			// non-ASCII letter, but not '†' (0xe2…) nor other
			// punctuation written in UTF-8 here.
			return passing
		}
		return holding
	}
	return holding
}

// decide treats a held line, complete (ending in '\n') or the answer's
// last.
func (a *answerReader) decide(line []byte, complete bool) {
	text := strings.TrimRight(string(line), "\r\n")
	trimmed := strings.TrimSpace(text)
	newline := func() {
		if complete {
			a.out.WriteByte('\n')
		}
	}
	switch a.state {
	case reasoning:
		if i := indexFold(text, a.closeTag); i >= 0 {
			a.state = beforePlan
			a.rest(text[i+len(a.closeTag):], complete)
			return
		}
		newline()
		return
	case fenced:
		if isClosingFence(trimmed, a.fence) {
			a.state = afterBlock
			if a.json {
				a.state = finished
			}
			newline()
			return
		}
		if !a.seen && trimmed != "" {
			a.seen = true
			a.json = trimmed[0] == '{' || trimmed[0] == '['
		}
		a.emit(line)
		return
	case held:
		a.hold(line, trimmed, complete)
		return
	case skipped:
		if isClosingFence(trimmed, a.fence) {
			a.state = a.resume
		}
		newline()
		return
	case finished:
		newline()
		return
	}
	// Before the plan, between code blocks, or a line of a plan without
	// a fence that may be prose.
	if closeTag, rest, ok := openReasoning(trimmed); ok && a.state != afterBlock {
		if i := indexFold(rest, closeTag); i >= 0 {
			a.rest(rest[i+len(closeTag):], complete)
			return
		}
		a.state, a.closeTag = reasoning, closeTag
		newline()
		return
	}
	if i := closingReasoning(trimmed); i >= 0 && a.state == beforePlan {
		// A reasoning block whose opening tag the server left out.
		a.rest(trimmed[i:], complete)
		return
	}
	if fence, tag, ok := openingFence(trimmed); ok {
		switch {
		case a.state == beforePlan:
			a.fence, a.tag = fence, tag
			if planTags[tag] {
				a.state, a.taken = fenced, true
			} else {
				a.open(false)
			}
		case a.state == afterBlock && tag == a.tag:
			a.fence = fence
			if planTags[tag] {
				a.state = fenced
			} else {
				a.open(true)
			}
		case a.state == afterBlock:
			a.state, a.fence, a.resume = skipped, fence, afterBlock
		case a.state == plain:
			a.state = finished // the plan is over; what follows repeats it or explains it
		}
		newline()
		return
	}
	if a.state == afterBlock {
		newline()
		return
	}
	if trimmed != "" && (trimmed[0] == '{' || trimmed[0] == '[') && a.state == beforePlan {
		a.state, a.taken = jsonPlan, true
		a.emit(line)
		return
	}
	if startsStatement(trimmed) {
		if a.state == beforePlan {
			a.state, a.taken = plain, true
		}
		a.emit(line)
		return
	}
	newline()
}

// The tags of a code block that say it holds plan text.
var planTags = map[string]bool{"plan": true, "obelisk": true}

// The tags of a code block that say it holds JSON.
var jsonTags = map[string]bool{"json": true, "jsonc": true, "json5": true}

// open starts holding a code block that may be the plan; after says that
// it follows the plan's block, which it may go on with.
func (a *answerReader) open(after bool) {
	a.state, a.after = held, after
	a.block, a.first, a.started, a.blockJSON = a.block[:0], "", false, false
}

// hold takes a line of a held block: the block's closing fence, or a line
// held until the block shows whether it is the plan.
func (a *answerReader) hold(line []byte, trimmed string, complete bool) {
	if isClosingFence(trimmed, a.fence) {
		a.settle()
		if complete {
			a.out.WriteByte('\n')
		}
		return
	}
	a.block = append(a.block, line...)
	if a.first == "" {
		a.first = trimmed
	}
	if !a.started && trimmed != "" && !strings.HasPrefix(trimmed, "#") && !strings.HasPrefix(trimmed, "//") {
		a.started = true
		a.blockJSON = trimmed[0] == '{' || trimmed[0] == '['
		if a.text && !a.blockJSON && !jsonTags[a.tag] && startsStatement(trimmed) {
			a.take()
			return
		}
	}
	if len(a.block) > maxHeldBlock {
		a.setAsideBlock()
		a.state = skipped
	}
}

// settle decides, once it is whole, whether a held block is the plan.
func (a *answerReader) settle() {
	if a.want(a.block, a.blockJSON) && !(a.after && a.blockJSON) {
		a.take()
		a.state = afterBlock
		if a.json {
			a.state = finished
		}
		return
	}
	a.setAsideBlock()
}

// take passes a held block on as the plan, which it goes on with.
func (a *answerReader) take() {
	a.state, a.taken, a.seen, a.json = fenced, true, true, a.blockJSON
	a.emit(a.block)
	a.block = a.block[:0]
}

// setAsideBlock drops a held block that is not the plan, and names it
// among those set aside when it does not follow the plan.
func (a *answerReader) setAsideBlock() {
	a.out.Write(bytes.Repeat([]byte{'\n'}, bytes.Count(a.block, []byte{'\n'})))
	a.block = a.block[:0]
	a.resume = afterBlock
	if !a.after {
		a.setAside.add(a.tag, a.first)
		a.resume = beforePlan
	}
	a.state = a.resume
}

// rest reads what follows a closing reasoning tag on its line as a line
// of its own.
func (a *answerReader) rest(s string, complete bool) {
	if strings.TrimSpace(s) == "" {
		if complete {
			a.out.WriteByte('\n')
		}
		return
	}
	for i := 0; i < len(s); i++ {
		a.feed(s[i])
	}
	if complete {
		a.feed('\n')
	}
}

// emit passes on a held line.
func (a *answerReader) emit(line []byte) {
	for _, c := range line {
		a.pass(c)
	}
}

// pass passes on one byte of the plan, following its brackets so that a
// line inside brackets is never taken for prose.
func (a *answerReader) pass(c byte) {
	if a.state == finished {
		if c == '\n' {
			a.out.WriteByte(c)
		}
		return
	}
	a.out.WriteByte(c)
	switch a.state {
	case plain:
		a.seen = true
		a.lexPlan(c)
	case jsonPlan:
		a.seen = true
		a.lexJSON(c)
	}
}

// lexPlan follows the brackets of plan text: strings are on one line, and
// '#' starts a comment outside them.
func (a *answerReader) lexPlan(c byte) {
	switch {
	case c == '\n':
		a.quote, a.escaped, a.comment = 0, false, false
	case a.comment:
	case a.quote != 0:
		switch {
		case a.escaped:
			a.escaped = false
		case c == '\\':
			a.escaped = true
		case c == a.quote:
			a.quote = 0
		}
	case c == '"' || c == '\'':
		a.quote = c
	case c == '#':
		a.comment = true
	case c == '(' || c == '[' || c == '{':
		a.depth++
	case c == ')' || c == ']' || c == '}':
		if a.depth > 0 {
			a.depth--
		}
	}
}

// lexJSON follows a JSON document; the plan ends with it.
func (a *answerReader) lexJSON(c byte) {
	switch {
	case a.quote != 0:
		switch {
		case a.escaped:
			a.escaped = false
		case c == '\\':
			a.escaped = true
		case c == '"':
			a.quote = 0
		}
	case c == '"':
		a.quote = c
	case c == '{' || c == '[':
		a.depth++
	case c == '}' || c == ']':
		a.depth--
		if a.depth <= 0 {
			a.state = finished
			a.mode = dropping
		}
	}
}

// The reasoning blocks of models, by their opening tags.
var reasoningTags = []string{"think", "thinking", "reasoning"}

// openReasoning reports whether a line opens a reasoning block, and
// returns its closing tag and the rest of the line.
func openReasoning(line string) (closeTag, rest string, ok bool) {
	for _, t := range reasoningTags {
		if indexFold(line, "<"+t+">") == 0 {
			return "</" + t + ">", line[len(t)+2:], true
		}
	}
	return "", "", false
}

// closingReasoning returns the offset after a closing reasoning tag in a
// line, or -1.
func closingReasoning(line string) int {
	for _, t := range reasoningTags {
		if i := indexFold(line, "</"+t+">"); i >= 0 {
			return i + len(t) + 3
		}
	}
	return -1
}

// indexFold returns the offset of the first instance of an ASCII tag in
// s, ignoring the case of ASCII letters, or -1.
func indexFold(s, tag string) int {
	for i := 0; i+len(tag) <= len(s); i++ {
		j := 0
		for j < len(tag) && lowerASCII(s[i+j]) == tag[j] {
			j++
		}
		if j == len(tag) {
			return i
		}
	}
	return -1
}

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// openingFence reads a line that opens a Markdown code block: three or
// more backquotes or tildes, then a tag (any, or none).
func openingFence(line string) (fence, tag string, ok bool) {
	m := fenceLine().FindStringSubmatch(line)
	if m == nil {
		return "", "", false
	}
	return m[1], strings.ToLower(m[2]), true
}

// fenceLine is compiled when a fence is first read, not at start-up.
var fenceLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("^(```+|~~~+)[ \t]*([^`\\s]*)[^`]*$") })

// isClosingFence reports whether a line closes the block fence opened:
// the same character, at least as many, and nothing else.
func isClosingFence(line, fence string) bool {
	if len(line) < len(fence) || line[0] != fence[0] {
		return false
	}
	return strings.Trim(line, string(fence[0])) == ""
}

// startsStatement reports whether a line starts a statement of a plan
// rather than a sentence: a step (labelled or not), a declaration, or a
// setting. A sentence that starts with a plan keyword and goes on in
// words ("output the total") is a sentence.
func startsStatement(line string) bool {
	return statementStart().MatchString(line)
}

const (
	name     = `[\p{L}_][\p{L}\p{N}_]*`
	toolName = name + `(?:[.-]` + name + `)*`
)

// statementStart is compiled when first used, not when the package is
// loaded: most commands never read a model's answer.
var statementStart = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:` +
		name + `[ \t]*:[ \t]*(?:for[ \t]+each[ \t]|` + toolName + `[ \t]*\()` + // label: call, label: for each
		`|` + toolName + `\(` + // call
		`|for[ \t]+each[ \t]` +
		`|tool[ \t]+` + toolName + `(?:[ \t(]|$)` +
		`|type[ \t]+` + name + `[ \t]+(?:[{\["']|` + name + `[ \t]*\??[ \t]*(?:$|\|))` +
		`|(?:input|state)[ \t]*\{` +
		`|plan[ \t]+` + name + `[ \t]*\(` +
		`|output[ \t]*(?:[{\[(†$"'-]|[0-9]|(?:true|false|null)[ \t]*$|` + name + `(?:\.` + name + `)*[ \t]*$)` +
		`|mode[ \t]+(?:eager|lazy)\b` +
		`|on[ \t]+failure\b` +
		`|approve(?:[ \t]+["']|[ \t]*$)` +
		`|import[ \t]+["']` +
		`)`)
})
