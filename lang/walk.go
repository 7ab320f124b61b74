package lang

// Inspect walks the tree rooted at n in source order, calling fn for each
// node, n included. If fn returns false, the node's children are skipped.
// Besides the item, expression and type nodes, Inspect visits Idents,
// Calls, Args, Outputs, Each clauses, options, path elements, field
// declarations, object fields and tool attributes.
func Inspect(n Node, fn func(Node) bool) {
	if n == nil || isNilNode(n) || !fn(n) {
		return
	}
	visit := func(c Node) {
		if c != nil && !isNilNode(c) {
			Inspect(c, fn)
		}
	}
	switch n := n.(type) {
	case *File:
		for _, it := range n.Items {
			visit(it)
		}
	case *ModeDecl:
		visit(n.Mode)
	case *PolicyDecl:
		visit(n.Action)
		visit(n.Max)
	case *ApproveDecl:
		visit(n.Message)
	case *ImportDecl:
		visit(n.Path)
	case *TypeDecl:
		visit(n.Name)
		visit(n.Type)
	case *ToolDecl:
		visit(n.Name)
		for _, p := range n.Params {
			visit(p)
		}
		visit(n.Result)
		for _, a := range n.Attrs {
			visit(a)
		}
	case *ToolAttr:
		visit(n.Name)
		visit(n.Value)
	case *InputDecl:
		for _, f := range n.Fields {
			visit(f)
		}
	case *StateDecl:
		for _, f := range n.Fields {
			visit(f)
		}
	case *PlanDecl:
		visit(n.Name)
		for _, p := range n.Params {
			visit(p)
		}
		visit(n.Result)
		for _, it := range n.Items {
			visit(it)
		}
	case *OutputDecl:
		visit(n.Value)
	case *Step:
		visit(n.Label)
		visit(n.Each)
		visit(n.Call)
		visit(n.Task)
		visit(n.Out)
		for _, o := range n.Options {
			visit(o)
		}
	case *Each:
		visit(n.Var)
		visit(n.List)
		visit(n.Max)
	case *Call:
		visit(n.Tool)
		for _, a := range n.Args {
			visit(a)
		}
	case *Arg:
		visit(n.Name)
		visit(n.Value)
	case *Task:
		visit(n.Goal)
		for _, r := range n.Refs {
			visit(r)
		}
		for _, u := range n.Using {
			visit(u)
		}
	case *HoleExpr:
		visit(n.Instruction)
		for _, r := range n.Refs {
			visit(r)
		}
	case *HintOption:
		visit(n.Name)
	case *Outputs:
		visit(n.Success)
		visit(n.Error)
	case *WhenOption:
		visit(n.Cond)
	case *ExpectOption:
		visit(n.Cond)
	case *RetryOption:
		visit(n.Count)
		visit(n.Backoff)
	case *TimeoutOption:
		visit(n.Duration)
	case *FallbackOption:
		visit(n.Call)
	case *ApproveOption:
		visit(n.Message)
	case *ResultOption:
		visit(n.Value)
	case *Ref:
		visit(n.Root)
		for _, p := range n.Path {
			visit(p)
		}
	case *ListExpr:
		for _, e := range n.Elems {
			visit(e)
		}
	case *ObjectExpr:
		for _, f := range n.Fields {
			visit(f)
		}
	case *ObjectField:
		visit(n.Key)
		visit(n.Value)
	case *CELExpr:
		for _, r := range n.Refs {
			visit(r)
		}
	case *ListType:
		visit(n.Elem)
	case *OptionalType:
		visit(n.Elem)
	case *EnumType:
		for _, v := range n.Values {
			visit(v)
		}
	case *ObjectType:
		for _, f := range n.Fields {
			visit(f)
		}
	case *FieldDecl:
		visit(n.Name)
		visit(n.Type)
		visit(n.Default)
	}
}

// isNilNode reports whether n is an interface holding a nil pointer.
func isNilNode(n Node) bool {
	switch n := n.(type) {
	case *Ident:
		return n == nil
	case *Literal:
		return n == nil
	case *Ref:
		return n == nil
	case *Each:
		return n == nil
	case *Outputs:
		return n == nil
	case *Call:
		return n == nil
	case *Task:
		return n == nil
	}
	switch n.(type) {
	case Expr, TypeExpr:
		return isNilPtr(n)
	}
	return false
}

func isNilPtr(n Node) bool {
	switch n := n.(type) {
	case *ListExpr:
		return n == nil
	case *ObjectExpr:
		return n == nil
	case *CELExpr:
		return n == nil
	case *HoleExpr:
		return n == nil
	case *NamedType:
		return n == nil
	case *ListType:
		return n == nil
	case *ObjectType:
		return n == nil
	case *EnumType:
		return n == nil
	case *OptionalType:
		return n == nil
	}
	return false
}

// spanner is implemented by every node through its embedded Span.
type spanner interface{ spanPtr() *Span }

func (s *Span) spanPtr() *Span { return s }

// mapSpans replaces the span of every node under n (n included) by f(span).
func mapSpans(n Node, f func(Span) Span) {
	Inspect(n, func(c Node) bool {
		if sp, ok := c.(spanner); ok {
			p := sp.spanPtr()
			*p = f(*p)
		}
		return true
	})
}
