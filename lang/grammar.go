package lang

// This file holds the reference grammar of .plan text: the syntax written
// declaratively with participle (github.com/alecthomas/participle), as an
// executable specification that the hand-written parser (parse.go,
// parse_expr.go) is checked against. Grammar returns it as EBNF; the copy
// in spec/grammar.ebnf is kept in step by a golden test.
//
// Both parsers read the same tokens: the lexer below wraps the scanner of
// scan.go. It drops comments (a CEL expression's text, a slice of the
// source, keeps those inside it), and merges a run of line breaks and the
// comment lines among them into one <nl> token, whose text is "\n\t" when
// the next line is indented and "\n" otherwise. It gives a few tokens a
// type of their own where the syntax depends on what is written directly
// before them, without a space:
//
//	<gluedident>    a name directly after '.', '-', '$' or '†' (†state, a.b, get-x)
//	<glueddot>      '.' directly after a name or ']' (a path or dotted tool name)
//	<gluedminus>    '-' directly after a name (get-weather)
//	<gluedbracket>  '[' directly after a name or ']' (an index: †x[0])
//	<gluedparen>    '(' directly after a name (a call: when(x: 1), not when (x))
//	<gluedint>      an integer directly after '-' (a negative number)
//	<gluedfloat>    a float directly after '-'
//	<gluedfraction> a float such as .5 directly after a name or ']' (†x.5: an error)
//
// and it splits two kinds by what they hold: <string> is a string the plan
// syntax can decode, <celstring> one only CEL reads (r"…", '''…''', \x41);
// <duration> is a duration, <unsigned> a CEL unsigned integer such as 5u,
// which is only allowed inside CEL. All other punctuation and operators are
// <punct> tokens, matched by their text. Illegal characters and
// unterminated strings are lexical errors.
//
// Values (literals, references, lists, objects) are parsed as such; an
// expression that is more than a value is CEL, kept as source text, and the
// grammar models it as a sequence of tokens with balanced brackets that runs
// to a context-dependent end: the Elem* productions serve call arguments and
// list elements (which may span lines), the Field* productions object field
// values and declared defaults, the Stmt* productions when, expect, result
// and output (which end at the end of the line or at an option keyword),
// and the Each* productions the list of a for each (which also ends at ':'
// and "max"). A value that starts an expression commits to being parsed as
// a value: a malformed list at the start of an expression is an error, not
// CEL.

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// Grammar returns the reference grammar of .plan text in EBNF, as
// participle prints it: one production per line, token classes of the
// lexer in angle brackets (<ident>, <nl>, <gluedident>, …), literal tokens
// in quotes, and participle's extensions: (?= …) and (?! …) look ahead
// without consuming, and ~X matches any single token that does not start X.
// The reference parser built from it accepts exactly the text that Parse
// accepts without diagnostics and builds the same syntax tree.
func Grammar() string {
	return referenceParser().String()
}

var (
	refParserOnce sync.Once
	refParser     *participle.Parser[file]
)

// referenceParser builds the participle parser once.
func referenceParser() *participle.Parser[file] {
	refParserOnce.Do(func() {
		refParser = participle.MustBuild[file](
			participle.Lexer(planLexer{}),
			participle.UseLookahead(participle.MaxLookahead),
		)
	})
	return refParser
}

// ---------------------------------------------------------------- grammar

// file is a whole .plan text: items separated by line ends or ';'.
type file struct {
	Items []*item `parser:"( NL | ';' )* ( @@ ( ( NL | ';' )+ @@ )* ( NL | ';' )* )?"`
}

// item is a top-level declaration or step. A keyword is a keyword only when
// it is not followed by ':' (a label) or by '(', '.' or '-' written without
// a space (a call, a dotted or hyphenated tool name); the same holds for
// "for" and the option keywords of a step.
type item struct {
	Mode    *modeDecl    `parser:"  @@"`
	Policy  *policyDecl  `parser:"| @@"`
	Approve *approveDecl `parser:"| @@"`
	Import  *importDecl  `parser:"| @@"`
	Type    *typeDecl    `parser:"| @@"`
	Tool    *toolDecl    `parser:"| @@"`
	Input   *inputDecl   `parser:"| @@"`
	State   *stateDecl   `parser:"| @@"`
	Plan    *planDecl    `parser:"| @@"`
	Output  *outputDecl  `parser:"| @@"`
	Step    *step        `parser:"| @@"`
}

// bodyItem is an item of a sub-plan's body: state, output and steps (the
// plan-wide settings, imports, types, tools, input and sub-plans are
// declared at the top level only).
type bodyItem struct {
	State  *stateDecl  `parser:"  @@"`
	Output *outputDecl `parser:"| @@"`
	Step   *step       `parser:"| @@"`
}

type modeDecl struct {
	Mode string `parser:"'mode' (?! ':' | GluedParen | GluedDot | GluedMinus ) @( 'eager' | 'lazy' )"`
}

type policyDecl struct {
	Action string  `parser:"'on' (?! ':' | GluedParen | GluedDot | GluedMinus ) 'failure' ( @( 'abort' | 'skip' | 'continue' )"`
	Replan bool    `parser:"| @'replan'"`
	Max    *intLit `parser:"( 'max' @@ )? )"`
}

type approveDecl struct {
	Message *string `parser:"'approve' (?! ':' | GluedParen | GluedDot | GluedMinus ) @String?"`
}

type importDecl struct {
	Path string `parser:"'import' (?! ':' | GluedParen | GluedDot | GluedMinus ) @String"`
}

type typeDecl struct {
	Name string    `parser:"'type' (?! ':' | GluedParen | GluedDot | GluedMinus ) @Ident '='?"`
	Type *typeExpr `parser:"@@"`
}

type toolDecl struct {
	Name   *toolName   `parser:"'tool' (?! ':' | GluedParen | GluedDot | GluedMinus ) @@"`
	Params *params     `parser:"( @@"`
	Result *typeExpr   `parser:"  ( '->' @@ )?"`
	Attrs  []*toolAttr `parser:"  @@* )?"`
}

type toolAttr struct {
	Flag    string  `parser:"  @( 'pure' | 'idempotent' | 'irreversible' | 'model' )"`
	Latency *string `parser:"| 'latency' @Duration"`
	Tokens  *intLit `parser:"| 'tokens' @@"`
}

type inputDecl struct {
	Fields *fieldBlock `parser:"'input' (?! ':' | GluedParen | GluedDot | GluedMinus ) @@"`
}

type stateDecl struct {
	Fields *fieldBlock `parser:"'state' (?! ':' | GluedParen | GluedDot | GluedMinus ) @@"`
}

type planDecl struct {
	Name   string      `parser:"'plan' (?! ':' | GluedParen | GluedDot | GluedMinus ) @Ident"`
	Params *params     `parser:"@@"`
	Result *typeExpr   `parser:"( '->' @@ )?"`
	Items  []*bodyItem `parser:"'{' ( NL | ';' )* ( @@ ( ( NL | ';' )+ @@ )* ( NL | ';' )* )? '}'"`
}

type outputDecl struct {
	Value *stmtExpr `parser:"'output' (?! ':' | GluedParen | GluedDot | GluedMinus ) @@"`
}

// params are the parameters of a tool or sub-plan, separated by ',', ';'
// or line breaks.
type params struct {
	Fields []*fieldDecl `parser:"'(' ( ',' | ';' | NL )* ( @@ ( ( ',' | ';' | NL )+ @@ )* ( ',' | ';' | NL )* )? ')'"`
}

// fieldBlock is the body of input, state and object types.
type fieldBlock struct {
	Fields []*fieldDecl `parser:"'{' ( ',' | ';' | NL )* ( @@ ( ( ',' | ';' | NL )+ @@ )* ( ',' | ';' | NL )* )? '}'"`
}

type fieldDecl struct {
	Name     *fieldName `parser:"@@"`
	Optional bool       `parser:"@'?'? ':'"`
	Type     *typeExpr  `parser:"@@"`
	Default  *fieldExpr `parser:"( '=' @@ )?"`
}

// fieldName is a field, parameter, argument or key name: a name (keywords
// included) or a string.
type fieldName struct {
	Ident  *string `parser:"  @Ident"`
	String *string `parser:"| @String"`
}

// step is a call with its label, for each clause, output paths and
// options. Output paths and options may continue on the following lines.
// A step does not start with a keyword (other than "for", which starts a
// for each clause and so cannot name the tool either).
type step struct {
	Label   *string   `parser:"(?! ( 'mode' | 'on' | 'approve' | 'import' | 'type' | 'tool' | 'input' | 'state' | 'plan' | 'output' | 'when' | 'expect' | 'retry' | 'timeout' | 'fallback' | 'result' | 'hint' ) (?! ':' | GluedParen | GluedDot | GluedMinus ) ) ( @Ident ':' )?"`
	Each    *each     `parser:"( @@"`
	Call    *call     `parser:"  @@ | (?! 'for' (?! ':' | GluedParen | GluedDot | GluedMinus ) ) ( @@"`
	Task    *task     `parser:"| @@ ) )"`
	Outputs *outputs  `parser:"@@?"`
	Options []*option `parser:"@@*"`
}

// task is a step a model completes when it runs: a goal, and the tools
// and sub-plans it may choose among.
type task struct {
	Goal  string     `parser:"'task' @String"`
	Using *usingList `parser:"( 'using' @@ )?"`
}

type usingList struct {
	Names []*toolName `parser:"'[' NL? ( @@ NL? ( ',' NL? @@ NL? )* ( ',' NL? )? )? ']'"`
}

type each struct {
	Var  string    `parser:"'for' 'each' @Ident 'in'"`
	List *eachExpr `parser:"@@"`
	Max  *intLit   `parser:"( 'max' @@ )? ':'"`
}

type call struct {
	Tool *toolName `parser:"@@ '('"`
	Args []*arg    `parser:"NL? ( @@ NL? ( ',' NL? @@ NL? )* ( ',' NL? )? )? ')'"`
}

// toolName is a name, or names joined by '.' or '-' without spaces.
type toolName struct {
	Name string `parser:"@Ident ( @( GluedDot | GluedMinus ) @GluedIdent )*"`
}

type arg struct {
	Name  *fieldName `parser:"@@ ':'"`
	Hole  *string    `parser:"NL? ( '?' @String"`
	Value *elemExpr  `parser:"| @@ )"`
}

// outputs are "-> †state.ok [|| †state.err]"; both parts may start a
// continuation line.
type outputs struct {
	Success *outputPath `parser:"( NL (?= '->' ) )? '->' @@"`
	Error   *outputPath `parser:"( ( NL (?= '||' ) )? '||' @@ )?"`
}

// outputPath is a whole state slot: †state.name or †state["name"].
type outputPath struct {
	Dagger string  `parser:"@Dagger (?= GluedIdent ) 'state'"`
	Field  *string `parser:"( GluedDot @GluedIdent"`
	Quoted *string `parser:"| GluedBracket @String ']' )"`
}

// option is a step option, on the step's line or on an indented line of
// its own ("\n\t" is a line break before an indented line); its keyword
// must be a keyword (see item).
type option struct {
	NewLine  bool           `parser:"( @'\\n\\t' (?= 'when' | 'expect' | 'retry' | 'timeout' | 'fallback' | 'approve' | 'result' | 'hint' ) )? (?! ( 'when' | 'expect' | 'retry' | 'timeout' | 'fallback' | 'approve' | 'result' | 'hint' ) ( ':' | GluedParen | GluedDot | GluedMinus ) )"`
	When     *stmtExpr      `parser:"( 'when' @@"`
	Expect   *stmtExpr      `parser:"| 'expect' @@"`
	Retry    *retryOption   `parser:"| @@"`
	Timeout  *string        `parser:"| 'timeout' @Duration"`
	Fallback *call          `parser:"| 'fallback' @@"`
	Approve  *approveOption `parser:"| @@"`
	Result   *stmtExpr      `parser:"| 'result' @@"`
	Hint     *fieldName     `parser:"| 'hint' @@ )"`
}

type retryOption struct {
	Count   *intLit `parser:"'retry' @@"`
	Backoff *string `parser:"( 'backoff' @Duration )?"`
}

type approveOption struct {
	Message *string `parser:"'approve' @String?"`
}

type intLit struct {
	Text string `parser:"@( '-' GluedInt | Int )"`
}

// ---------------------------------------------------------------- types

type typeExpr struct {
	Type     *primaryType `parser:"@@"`
	Optional bool         `parser:"@'?'? (?! '|' )"`
}

type primaryType struct {
	Enum   *enumType   `parser:"  @@"`
	List   *listType   `parser:"| @@"`
	Object *fieldBlock `parser:"| @@"`
	Named  *string     `parser:"| @Ident"`
}

// enumType is a union of constants; "null" alone is the named type null.
type enumType struct {
	Values []*literal `parser:"(?! 'null' (?! '|' ) ) @@ ( '|' @@ )*"`
}

type listType struct {
	Elem *typeExpr `parser:"'[' NL? @@ NL? ']'"`
}

// ---------------------------------------------------------------- values

type literal struct {
	String  *string `parser:"  @String"`
	Int     *string `parser:"| @( '-' GluedInt | Int )"`
	Float   *string `parser:"| @( '-' GluedFloat | Float | GluedFraction )"`
	Keyword *string `parser:"| @( 'true' | 'false' | 'null' )"`
}

// value is a literal, a reference, a list or an object (which becomes a
// CEL map once an element is not a key: value field).
type value struct {
	Literal *literal `parser:"  @@"`
	Ref     *ref     `parser:"| @@"`
	List    *list    `parser:"| @@"`
	Object  *object  `parser:"| @@"`
}

// ref is a reference, written without spaces: † or $, a root name, and
// .field, [index] and ["field"] elements. A .name followed by '(' is a CEL
// method call and not part of the reference, and so is .?name, CEL's
// optional selection.
type ref struct {
	Dagger string      `parser:"@Dagger"`
	Root   string      `parser:"@GluedIdent"`
	Path   []*pathElem `parser:"@@* (?! GluedDot (?! GluedIdent | '?' ) | GluedFraction )"`
}

type pathElem struct {
	Field string       `parser:"  GluedDot @GluedIdent (?! '(' )"`
	Index *lexer.Token `parser:"| GluedBracket @( Int | String | CELString ) ']'"`
}

type list struct {
	Elems []*elemExpr `parser:"'[' NL? ( @@ NL? ( ',' NL? @@ NL? )* ( ',' NL? )? )? ']'"`
}

// object is {key: value, …}. It is a CEL map when its first element is not
// a key: value field (a computed key), or from a later key on that is a
// string only CEL reads.
type object struct {
	Fields []*objectField `parser:"'{' ( ',' | ';' | NL )* ( @@ ( ( ',' | ';' | NL )+ @@ )* ( ',' | ';' | NL )*"`
	Rest   *celRest       `parser:"  @@?"`
	Map    *celMap        `parser:"| @@ )? '}'"`
}

type objectField struct {
	Key   *fieldName `parser:"@@ ':'"`
	Value *fieldExpr `parser:"@@ (?! '->' )"`
}

type celMap struct {
	Items []*groupItem `parser:"(?! ( Ident | String ) ':' ) @@+"`
}

type celRest struct {
	Items []*groupItem `parser:"(?= CELString ':' ) @@+"`
}

// ---------------------------------------------------------------- CEL

// group is a bracketed part of a CEL expression: any tokens with balanced
// brackets, in which every † or $ starts a reference.
type group struct {
	Items []*groupItem `parser:"'(' @@* ')' | '[' @@* ']' | '{' @@* '}'"`
}

type groupItem struct {
	Ref   *ref   `parser:"  @@"`
	Group *group `parser:"| @@"`
	Token bool   `parser:"| ~( '(' | ')' | '[' | ']' | '{' | '}' | Dagger | Duration )"`
}

// elemExpr is an argument value or a list element: it ends at ',', ';',
// '->' or a closing bracket, and may span lines.
type elemExpr struct {
	Tokens []lexer.Token
	Value  *value      `parser:"( @@"`
	Head   *exprItem   `parser:"| (?! '[' | '{' | '?' ) @@ )"`
	Tail   []*exprItem `parser:"( NL? @@ )*"`
}

// fieldExpr is an object field's value or a declared default: it ends at
// the end of the line, ',', ';', '->' or a closing bracket.
type fieldExpr struct {
	Tokens []lexer.Token
	Value  *value      `parser:"( @@"`
	Head   *exprItem   `parser:"| (?! '[' | '{' | '?' ) @@ )"`
	Tail   []*exprItem `parser:"@@*"`
}

// exprItem is a CEL item of elemExpr and fieldExpr.
type exprItem struct {
	Ref   *ref   `parser:"  @@"`
	Group *group `parser:"| @@"`
	Token bool   `parser:"| ~( '(' | ')' | '[' | ']' | '{' | '}' | Dagger | Duration | NL | ',' | ';' | '->' )"`
}

// stmtExpr is the expression of when, expect, result and output: it ends at
// the end of the line, ';', '->', '}' or an option keyword (unless written
// after '.'). A reference at its top level cannot be named after an option
// keyword.
type stmtExpr struct {
	Tokens []lexer.Token
	Value  *value      `parser:"( (?! Dagger ( 'when' | 'expect' | 'retry' | 'timeout' | 'fallback' | 'approve' | 'result' | 'hint' ) ) @@"`
	Head   *stmtItem   `parser:"| (?! '[' | '{' | '?' ) @@ )"`
	Tail   []*stmtItem `parser:"@@*"`
}

type stmtItem struct {
	Ref   *ref   `parser:"  (?! Dagger ( 'when' | 'expect' | 'retry' | 'timeout' | 'fallback' | 'approve' | 'result' | 'hint' ) ) @@"`
	Group *group `parser:"| @@"`
	Dot   bool   `parser:"| @'.' ( Ident | GluedIdent )?"`
	Token bool   `parser:"| ~( '(' | ')' | '[' | ']' | '{' | '}' | Dagger | Duration | NL | ';' | '->' | 'when' | 'expect' | 'retry' | 'timeout' | 'fallback' | 'approve' | 'result' | 'hint' )"`
}

// eachExpr is the list of a for each: like stmtExpr, and it also ends at
// ':' and "max"; a '?' must be in parentheses.
type eachExpr struct {
	Tokens []lexer.Token
	Value  *value      `parser:"( (?! Dagger ( 'when' | 'expect' | 'retry' | 'timeout' | 'fallback' | 'approve' | 'result' | 'hint' | 'max' ) ) @@"`
	Head   *eachItem   `parser:"| (?! '[' | '{' | '?' ) @@ )"`
	Tail   []*eachItem `parser:"@@*"`
}

type eachItem struct {
	Ref   *ref   `parser:"  (?! Dagger ( 'when' | 'expect' | 'retry' | 'timeout' | 'fallback' | 'approve' | 'result' | 'hint' | 'max' ) ) @@"`
	Group *group `parser:"| @@"`
	Dot   bool   `parser:"| @'.' ( Ident | GluedIdent )?"`
	Token bool   `parser:"| ~( '(' | ')' | '[' | ']' | '{' | '}' | Dagger | Duration | NL | ';' | '->' | ':' | '?' | 'max' | 'when' | 'expect' | 'retry' | 'timeout' | 'fallback' | 'approve' | 'result' | 'hint' )"`
}

// ---------------------------------------------------------------- lexer

// The token types of planLexer.
const (
	ltNL lexer.TokenType = iota + 1
	ltIdent
	ltGluedIdent
	ltInt
	ltGluedInt
	ltFloat
	ltGluedFloat
	ltGluedFraction
	ltDuration
	ltUnsigned
	ltString
	ltCELString
	ltDagger
	ltPunct
	ltGluedDot
	ltGluedMinus
	ltGluedBracket
	ltGluedParen
)

// planLexer is the participle lexer of the reference grammar. It wraps the
// hand-written scanner, so both parsers see the same tokens.
type planLexer struct{}

// Symbols returns the token types by name.
func (planLexer) Symbols() map[string]lexer.TokenType {
	return map[string]lexer.TokenType{
		"EOF": lexer.EOF, "NL": ltNL, "Ident": ltIdent, "GluedIdent": ltGluedIdent,
		"Int": ltInt, "GluedInt": ltGluedInt, "Float": ltFloat, "GluedFloat": ltGluedFloat,
		"GluedFraction": ltGluedFraction, "Duration": ltDuration, "Unsigned": ltUnsigned,
		"String": ltString, "CELString": ltCELString, "Dagger": ltDagger, "Punct": ltPunct,
		"GluedDot": ltGluedDot, "GluedMinus": ltGluedMinus, "GluedBracket": ltGluedBracket,
		"GluedParen": ltGluedParen,
	}
}

// Lex reads all of r and lexes it.
func (l planLexer) Lex(filename string, r io.Reader) (lexer.Lexer, error) {
	src, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return l.LexBytes(filename, src)
}

// LexString lexes s.
func (l planLexer) LexString(filename, s string) (lexer.Lexer, error) {
	return l.LexBytes(filename, []byte(s))
}

// LexBytes lexes src.
func (planLexer) LexBytes(filename string, src []byte) (lexer.Lexer, error) {
	toks, err := lexPlan(filename, src)
	if err != nil {
		return nil, err
	}
	return &tokenStream{toks: toks}, nil
}

// tokenStream returns tokens lexed in advance.
type tokenStream struct {
	toks []lexer.Token
	i    int
}

// Next returns the next token; after the last it keeps returning EOF.
func (s *tokenStream) Next() (lexer.Token, error) {
	t := s.toks[s.i]
	if s.i < len(s.toks)-1 {
		s.i++
	}
	return t, nil
}

// lexPlan turns src into the tokens of the reference grammar, ending with
// EOF. It fails on an illegal character or an unterminated string, which
// are errors wherever they are.
func lexPlan(filename string, src []byte) ([]lexer.Token, error) {
	s := newScanner(src, 0, 1, false)
	if bytes.HasPrefix(src, []byte("\uFEFF")) {
		// A byte order mark is skipped and takes no column, as in Parse.
		s.off, s.adjust = 3, 3
	}
	var (
		toks []lexer.Token
		prev token
	)
	for {
		t := s.next()
		pos := lexer.Position{Filename: filename, Offset: t.Span.Start.Offset, Line: t.Span.Start.Line, Column: t.Span.Start.Column}
		glued := prev.Span.End.Offset == t.Span.Start.Offset && prev.Span.End.Line > 0
		afterName := glued && (prev.Kind == tokIdent || prev.Kind == tokRBrack)
		typ := ltPunct
		switch t.Kind {
		case tokEOF:
			toks = append(toks, lexer.EOFToken(pos))
			return toks, nil
		case tokIllegal:
			return nil, fmt.Errorf("%s: %s", pos, t.Err)
		case tokComment:
			prev = t
			continue
		case tokNewline:
			prev = t
			if n := len(toks); n > 0 && toks[n-1].Type == ltNL {
				continue
			}
			typ = ltNL
		case tokIdent:
			typ = ltIdent
			if glued && (prev.Kind == tokDot || prev.Kind == tokMinus || prev.Kind == tokDagger) {
				typ = ltGluedIdent
			}
		case tokInt:
			typ = ltInt
			if glued && prev.Kind == tokMinus {
				typ = ltGluedInt
			}
		case tokFloat:
			switch {
			case glued && prev.Kind == tokMinus:
				typ = ltGluedFloat
			case afterName && strings.HasPrefix(t.Text, "."):
				typ = ltGluedFraction
			default:
				typ = ltFloat
			}
		case tokDuration:
			typ = ltDuration
			if strings.HasSuffix(t.Text, "u") || strings.HasSuffix(t.Text, "U") {
				typ = ltUnsigned
			}
		case tokString:
			if t.Err != "" {
				return nil, fmt.Errorf("%s: %s", pos, t.Err)
			}
			typ = ltString
			if _, err := unquote(t.Text); err != nil {
				typ = ltCELString
			}
		case tokDagger:
			typ = ltDagger
		case tokDot:
			if afterName {
				typ = ltGluedDot
			}
		case tokMinus:
			if glued && prev.Kind == tokIdent {
				typ = ltGluedMinus
			}
		case tokLBrack:
			if afterName {
				typ = ltGluedBracket
			}
		case tokLParen:
			if glued && prev.Kind == tokIdent {
				typ = ltGluedParen
			}
		}
		if n := len(toks); n > 0 && toks[n-1].Type == ltNL && t.Kind != tokNewline && pos.Column > 1 {
			toks[n-1].Value = "\n\t" // the line is indented
		}
		toks = append(toks, lexer.Token{Type: typ, Value: t.Text, Pos: pos})
		prev = t
	}
}

// ---------------------------------------------------------------- to the AST

// parseReference parses src with the reference grammar and converts the
// result to the syntax tree that Parse builds (without spans, comments and
// layout flags). It returns an error where Parse reports a diagnostic.
func parseReference(name string, src []byte) (*File, error) {
	toks, err := lexPlan(name, src)
	if err != nil {
		return nil, err
	}
	peek, err := lexer.Upgrade(&tokenStream{toks: toks})
	if err != nil {
		return nil, err
	}
	tree, err := referenceParser().ParseFromLexer(peek)
	if err != nil {
		return nil, err
	}
	c := &refConverter{src: src}
	f := &File{Name: name}
	for _, it := range tree.Items {
		f.Items = append(f.Items, c.item(it))
	}
	if c.err != nil {
		return nil, c.err
	}
	return f, nil
}

// refConverter turns the participle tree into the syntax tree. It checks
// what the grammar cannot: that numbers, strings, durations and indexes
// decode.
type refConverter struct {
	src []byte
	err error
}

func (c *refConverter) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf(format, args...)
	}
}

func (c *refConverter) item(it *item) Item {
	switch {
	case it.Mode != nil:
		return c.modeDecl(it.Mode)
	case it.Policy != nil:
		return c.policyDecl(it.Policy)
	case it.Approve != nil:
		return &ApproveDecl{Message: c.optString(it.Approve.Message)}
	case it.Import != nil:
		return &ImportDecl{Path: c.stringLit(it.Import.Path)}
	case it.Type != nil:
		return &TypeDecl{Name: &Ident{Name: it.Type.Name}, Type: c.typ(it.Type.Type)}
	case it.Tool != nil:
		return c.toolDecl(it.Tool)
	case it.Input != nil:
		return &InputDecl{Fields: c.fields(it.Input.Fields.Fields)}
	case it.State != nil:
		return &StateDecl{Fields: c.fields(it.State.Fields.Fields)}
	case it.Plan != nil:
		return c.planDecl(it.Plan)
	case it.Output != nil:
		return &OutputDecl{Value: c.stmtExpr(it.Output.Value)}
	}
	return c.step(it.Step)
}

func (c *refConverter) bodyItem(it *bodyItem) Item {
	switch {
	case it.State != nil:
		return &StateDecl{Fields: c.fields(it.State.Fields.Fields)}
	case it.Output != nil:
		return &OutputDecl{Value: c.stmtExpr(it.Output.Value)}
	}
	return c.step(it.Step)
}

func (c *refConverter) modeDecl(d *modeDecl) Item {
	return &ModeDecl{Mode: &Ident{Name: d.Mode}}
}

func (c *refConverter) policyDecl(d *policyDecl) Item {
	p := &PolicyDecl{Action: &Ident{Name: d.Action}}
	if d.Replan {
		p.Action.Name = "replan"
	}
	if d.Max != nil {
		p.Max = c.intLit(d.Max)
	}
	return p
}

func (c *refConverter) toolDecl(d *toolDecl) Item {
	t := &ToolDecl{Name: &Ident{Name: d.Name.Name}}
	if d.Params == nil {
		return t
	}
	t.HasSignature = true
	t.Params = c.fields(d.Params.Fields)
	if d.Result != nil {
		t.Result = c.typ(d.Result)
	}
	for _, a := range d.Attrs {
		attr := &ToolAttr{}
		switch {
		case a.Latency != nil:
			attr.Name = &Ident{Name: "latency"}
			attr.Value = c.duration(*a.Latency)
		case a.Tokens != nil:
			attr.Name = &Ident{Name: "tokens"}
			attr.Value = c.intLit(a.Tokens)
		default:
			attr.Name = &Ident{Name: a.Flag}
		}
		t.Attrs = append(t.Attrs, attr)
	}
	return t
}

func (c *refConverter) planDecl(d *planDecl) Item {
	p := &PlanDecl{Name: &Ident{Name: d.Name}, Params: c.fields(d.Params.Fields)}
	if d.Result != nil {
		p.Result = c.typ(d.Result)
	}
	for _, it := range d.Items {
		p.Items = append(p.Items, c.bodyItem(it))
	}
	return p
}

func (c *refConverter) fields(fs []*fieldDecl) []*FieldDecl {
	var out []*FieldDecl
	for _, f := range fs {
		d := &FieldDecl{Name: c.fieldName(f.Name), Optional: f.Optional, Type: c.typ(f.Type)}
		if f.Default != nil {
			d.Default = c.fieldExpr(f.Default)
		}
		out = append(out, d)
	}
	return out
}

func (c *refConverter) fieldName(n *fieldName) *Ident {
	if n.Ident != nil {
		return &Ident{Name: *n.Ident}
	}
	return &Ident{Name: c.unquote(*n.String), Quoted: true}
}

func (c *refConverter) step(s *step) Item {
	st := &Step{}
	if s.Task != nil {
		st.Task = c.task(s.Task)
	} else {
		st.Call = c.call(s.Call)
	}
	if s.Label != nil {
		st.Label = &Ident{Name: *s.Label}
	}
	if s.Each != nil {
		st.Each = &Each{Var: &Ident{Name: s.Each.Var}, List: c.eachExpr(s.Each.List)}
		if s.Each.Max != nil {
			st.Each.Max = c.intLit(s.Each.Max)
		}
	}
	if s.Outputs != nil {
		st.Out = &Outputs{Success: c.outputPath(s.Outputs.Success)}
		if s.Outputs.Error != nil {
			st.Out.Error = c.outputPath(s.Outputs.Error)
		}
	}
	for _, o := range s.Options {
		st.Options = append(st.Options, c.option(o))
	}
	return st
}

func (c *refConverter) call(cl *call) *Call {
	out := &Call{Tool: &Ident{Name: cl.Tool.Name}}
	for _, a := range cl.Args {
		if a.Hole != nil {
			lit := c.stringLit(*a.Hole)
			if strings.TrimSpace(lit.StringValue()) == "" {
				c.fail("the instruction of a hole is empty")
			}
			out.Args = append(out.Args, &Arg{Name: c.fieldName(a.Name), Value: &HoleExpr{Instruction: lit, Refs: c.textRefs(lit)}})
			continue
		}
		out.Args = append(out.Args, &Arg{Name: c.fieldName(a.Name), Value: c.elemExpr(a.Value)})
	}
	return out
}

func (c *refConverter) task(t *task) *Task {
	goal := c.stringLit(t.Goal)
	if strings.TrimSpace(goal.StringValue()) == "" {
		c.fail("the goal of a task is empty")
	}
	out := &Task{Goal: goal, Refs: c.textRefs(goal)}
	if t.Using != nil {
		out.Using = []*Ident{}
		for _, n := range t.Using.Names {
			out.Using = append(out.Using, &Ident{Name: n.Name})
		}
	}
	return out
}

// textRefs reads the references of an instruction or a goal, as Parse
// does.
func (c *refConverter) textRefs(lit *Literal) []*Ref {
	refs, diags := TextRefs("", lit, false)
	if len(diags) > 0 {
		c.fail("%s", diags[0].Message)
	}
	return refs
}

func (c *refConverter) outputPath(o *outputPath) *Ref {
	el := &PathElem{}
	if o.Field != nil {
		el.Field = *o.Field
	} else {
		el.Field, el.Quoted = c.unquote(*o.Quoted), true
	}
	return &Ref{ASCII: o.Dagger == "$", Root: &Ident{Name: "state"}, Path: []*PathElem{el}}
}

func (c *refConverter) option(o *option) Option {
	switch {
	case o.When != nil:
		return &WhenOption{Cond: c.stmtExpr(o.When)}
	case o.Expect != nil:
		return &ExpectOption{Cond: c.stmtExpr(o.Expect)}
	case o.Retry != nil:
		r := &RetryOption{Count: c.intLit(o.Retry.Count)}
		if o.Retry.Backoff != nil {
			r.Backoff = c.duration(*o.Retry.Backoff)
		}
		return r
	case o.Timeout != nil:
		return &TimeoutOption{Duration: c.duration(*o.Timeout)}
	case o.Fallback != nil:
		return &FallbackOption{Call: c.call(o.Fallback)}
	case o.Approve != nil:
		return &ApproveOption{Message: c.optString(o.Approve.Message)}
	case o.Hint != nil:
		id := c.fieldName(o.Hint)
		id.Quoted = !isPlainName(id.Name)
		return &HintOption{Name: id}
	}
	return &ResultOption{Value: c.stmtExpr(o.Result)}
}

// ---------------------------------------------------------------- literals

func (c *refConverter) unquote(text string) string {
	s, err := unquote(text)
	if err != nil {
		c.fail("%v", err)
	}
	return s
}

func (c *refConverter) stringLit(text string) *Literal {
	return &Literal{Kind: LitString, Value: c.unquote(text), Raw: text}
}

func (c *refConverter) optString(text *string) *Literal {
	if text == nil {
		return nil
	}
	return c.stringLit(*text)
}

// intLit decodes a count: the digits, then the sign.
func (c *refConverter) intLit(l *intLit) *Literal {
	digits, neg := strings.CutPrefix(l.Text, "-")
	n, err := parseInt(digits)
	if err != nil {
		c.fail("integer %s is out of range", digits)
	}
	if neg {
		n = -n
	}
	return &Literal{Kind: LitInt, Value: n, Raw: l.Text}
}

func (c *refConverter) duration(text string) *Literal {
	d, err := parseDuration(text)
	if err != nil {
		c.fail("%v", err)
	}
	return &Literal{Kind: LitDuration, Value: d, Raw: text}
}

func (c *refConverter) literal(l *literal) *Literal {
	switch {
	case l.String != nil:
		return c.stringLit(*l.String)
	case l.Int != nil:
		n, err := parseInt(*l.Int)
		if err != nil {
			c.fail("%s", intRangeMessage(*l.Int))
		}
		return &Literal{Kind: LitInt, Value: n, Raw: *l.Int}
	case l.Float != nil:
		f, err := strconv.ParseFloat(*l.Float, 64)
		if err != nil {
			c.fail("number %s is out of range", *l.Float)
		}
		return &Literal{Kind: LitFloat, Value: f, Raw: *l.Float}
	case *l.Keyword == "null":
		return &Literal{Kind: LitNull, Raw: "null"}
	}
	return &Literal{Kind: LitBool, Value: *l.Keyword == "true", Raw: *l.Keyword}
}

// ---------------------------------------------------------------- types

func (c *refConverter) typ(t *typeExpr) TypeExpr {
	var out TypeExpr
	p := t.Type
	switch {
	case p.Enum != nil:
		e := &EnumType{}
		for _, v := range p.Enum.Values {
			e.Values = append(e.Values, c.literal(v))
		}
		out = e
	case p.List != nil:
		out = &ListType{Elem: c.typ(p.List.Elem)}
	case p.Object != nil:
		out = &ObjectType{Fields: c.fields(p.Object.Fields)}
	default:
		out = &NamedType{Name: *p.Named}
	}
	if t.Optional {
		out = &OptionalType{Elem: out}
	}
	return out
}

// ---------------------------------------------------------------- expressions

// value converts a value. It reports whether the value is one: an object
// with a CEL map part is not.
func (c *refConverter) value(v *value) (Expr, bool) {
	switch {
	case v.Literal != nil:
		return c.literal(v.Literal), true
	case v.Ref != nil:
		return c.ref(v.Ref), true
	case v.List != nil:
		l := &ListExpr{}
		for _, e := range v.List.Elems {
			l.Elems = append(l.Elems, c.elemExpr(e))
		}
		return l, true
	}
	o := &ObjectExpr{}
	for _, f := range v.Object.Fields {
		o.Fields = append(o.Fields, &ObjectField{Key: c.fieldName(f.Key), Value: c.fieldExpr(f.Value)})
	}
	return o, v.Object.Rest == nil && v.Object.Map == nil
}

func (c *refConverter) ref(r *ref) *Ref {
	out := &Ref{ASCII: r.Dagger == "$", Root: &Ident{Name: r.Root}}
	for _, p := range r.Path {
		el := &PathElem{Field: p.Field}
		if t := p.Index; t != nil {
			switch t.Type {
			case ltInt:
				n, err := strconv.Atoi(t.Value)
				if err != nil || n < 0 {
					c.fail("list index %s is out of range", t.Value)
				}
				el.Index, el.IsIndex = n, true
			default:
				el.Field, el.Quoted = c.unquote(t.Value), true
			}
		}
		out.Path = append(out.Path, el)
	}
	return out
}

// celItem is a CEL item of an expression or a group.
type celItem interface {
	ref() *ref
	group() *group
}

func (i *groupItem) ref() *ref     { return i.Ref }
func (i *groupItem) group() *group { return i.Group }
func (i *exprItem) ref() *ref      { return i.Ref }
func (i *exprItem) group() *group  { return i.Group }
func (i *stmtItem) ref() *ref      { return i.Ref }
func (i *stmtItem) group() *group  { return i.Group }
func (i *eachItem) ref() *ref      { return i.Ref }
func (i *eachItem) group() *group  { return i.Group }

// celItems lists the CEL items of an expression: its head, unless the
// expression starts with a value, and its tail.
func celItems[T celItem](head T, hasHead bool, tail []T) []celItem {
	out := make([]celItem, 0, 1+len(tail))
	if hasHead {
		out = append(out, head)
	}
	for _, t := range tail {
		out = append(out, t)
	}
	return out
}

func (c *refConverter) elemExpr(e *elemExpr) Expr {
	return c.expr(e.Tokens, e.Value, len(e.Tail) > 0, celItems(e.Head, e.Head != nil, e.Tail))
}

func (c *refConverter) fieldExpr(e *fieldExpr) Expr {
	return c.expr(e.Tokens, e.Value, len(e.Tail) > 0, celItems(e.Head, e.Head != nil, e.Tail))
}

func (c *refConverter) stmtExpr(e *stmtExpr) Expr {
	return c.expr(e.Tokens, e.Value, len(e.Tail) > 0, celItems(e.Head, e.Head != nil, e.Tail))
}

func (c *refConverter) eachExpr(e *eachExpr) Expr {
	return c.expr(e.Tokens, e.Value, len(e.Tail) > 0, celItems(e.Head, e.Head != nil, e.Tail))
}

// expr converts an expression: a value alone is the value, anything else
// is CEL. A value that starts CEL is converted too, so that its errors are
// reported as Parse reports them.
func (c *refConverter) expr(toks []lexer.Token, v *value, tail bool, items []celItem) Expr {
	var refs []*Ref
	if v != nil {
		e, ok := c.value(v)
		if ok && !tail {
			return e
		}
		refs = c.valueRefs(refs, v)
	}
	return c.cel(toks, c.itemRefs(refs, items))
}

// cel builds a CEL expression from its tokens and the references in them:
// its text is the source they cover, comments included.
func (c *refConverter) cel(toks []lexer.Token, refs []*Ref) *CELExpr {
	first, last := toks[0], toks[len(toks)-1]
	return &CELExpr{Text: string(c.src[first.Pos.Offset : last.Pos.Offset+len(last.Value)]), Refs: refs}
}

// valueRefs appends the references in v, in source order.
func (c *refConverter) valueRefs(refs []*Ref, v *value) []*Ref {
	switch {
	case v.Ref != nil:
		refs = append(refs, c.ref(v.Ref))
	case v.List != nil:
		for _, e := range v.List.Elems {
			if e.Value != nil {
				refs = c.valueRefs(refs, e.Value)
			}
			refs = c.itemRefs(refs, celItems(e.Head, e.Head != nil, e.Tail))
		}
	case v.Object != nil:
		for _, f := range v.Object.Fields {
			if f.Value.Value != nil {
				refs = c.valueRefs(refs, f.Value.Value)
			}
			refs = c.itemRefs(refs, celItems(f.Value.Head, f.Value.Head != nil, f.Value.Tail))
		}
		if v.Object.Rest != nil {
			refs = c.itemRefs(refs, celItems[*groupItem](nil, false, v.Object.Rest.Items))
		}
		if v.Object.Map != nil {
			refs = c.itemRefs(refs, celItems[*groupItem](nil, false, v.Object.Map.Items))
		}
	}
	return refs
}

// itemRefs appends the references in CEL items, in source order.
func (c *refConverter) itemRefs(refs []*Ref, items []celItem) []*Ref {
	for _, it := range items {
		switch r, g := it.ref(), it.group(); {
		case r != nil:
			refs = append(refs, c.ref(r))
		case g != nil:
			refs = c.itemRefs(refs, celItems[*groupItem](nil, false, g.Items))
		}
	}
	return refs
}
