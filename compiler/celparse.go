package compiler

import (
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/parser"
	exprpb "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
)

// celMaxSize and celMaxDepth bound an expression's length in code points
// and its nesting.
const (
	celMaxSize  = 16384
	celMaxDepth = 64
)

// prattParser is cel-go's hand-written parser, configured as baseEnv
// configures the ANTLR parser that cel.Env.Parse uses: the same macros,
// optional syntax and limits. cel-go holds the two to the same trees,
// node ids and positions; the hand-written one takes a tenth of the time
// and of the allocations. It is never modified after it is built.
var prattParser = sync.OnceValues(func() (*parser.Parser, error) {
	base, err := baseEnv()
	if err != nil {
		return nil, err
	}
	return parser.NewParser(
		parser.EnablePrattParser(true),
		parser.EnableOptionalSyntax(true),
		parser.Macros(base.Macros()...),
		parser.ExpressionSizeCodePointLimit(celMaxSize),
		parser.MaxRecursionDepth(celMaxDepth),
	)
})

// parseCEL parses a CEL expression for env. An expression the
// hand-written parser rejects is parsed again by env, so that syntax
// errors keep the ANTLR parser's messages; so is one where the two are
// known to differ (see prattDiffers). FuzzParseCEL holds the two to the
// same trees.
func parseCEL(env *cel.Env, text string) (*cel.Ast, *cel.Issues) {
	if p, err := prattParser(); err == nil && !strings.Contains(text, "0X") {
		if src, err := common.NewTextSourceWithLimit(text, celMaxSize); err == nil {
			if parsed, errs := p.Parse(src); len(errs.GetErrors()) == 0 && !prattDiffers(parsed.Expr()) {
				e, err1 := ast.ExprToProto(parsed.Expr())
				info, err2 := ast.SourceInfoToProto(parsed.SourceInfo())
				if err1 == nil && err2 == nil {
					a := cel.ParsedExprToAstWithSource(&exprpb.ParsedExpr{Expr: e, SourceInfo: info}, src)
					return a, nil
				}
			}
		}
	}
	return env.Parse(text)
}

// prattDiffers reports a tree where the hand-written parser is known to
// differ from the ANTLR parser: an identifier with a leading dot (.name,
// the root namespace) gets another position. The ANTLR parser also
// rejects an upper-case hex prefix (0X1F), which parseCEL checks on the
// text.
func prattDiffers(e ast.Expr) bool {
	differs := false
	ast.PreOrderVisit(e, ast.NewExprVisitor(func(e ast.Expr) {
		if e.Kind() == ast.IdentKind && strings.HasPrefix(e.AsIdent(), ".") {
			differs = true
		}
	}))
	return differs
}
