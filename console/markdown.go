package console

import (
	"bytes"
	"html/template"
	"net/url"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// maxMarkdown is the longest text shown rendered as Markdown; a longer
// one is shown as its JSON.
const maxMarkdown = 64 << 10

// markdownHTML renders a value that is a string written in Markdown (it
// has a heading, a list, a link, emphasis, code, a quote or a rule: HTML
// alone is not) as HTML, and returns false for any other value. Raw HTML in the text is
// left out (goldmark without its unsafe option writes a comment in its
// place), every text is escaped, links go only to http and https
// addresses (any other link, and every image, is shown as its text), and
// a text longer than maxMarkdown is not rendered.
func markdownHTML(v any) (template.HTML, bool) {
	s, ok := v.(string)
	if !ok || len(s) > maxMarkdown || !strings.ContainsAny(s, "#*_`[->\n") {
		return "", false
	}
	md := goldmark.New()
	src := []byte(s)
	doc := md.Parser().Parse(text.NewReader(src))
	marked := false
	var unsafe []ast.Node
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading, *ast.List, *ast.FencedCodeBlock, *ast.CodeBlock, *ast.Blockquote, *ast.Emphasis, *ast.CodeSpan, *ast.ThematicBreak:
			marked = true
		case *ast.Link:
			marked = true
			if !webURL(string(n.Destination)) {
				unsafe = append(unsafe, n)
			}
		case *ast.AutoLink:
			marked = true
			if !webURL(string(n.URL(src))) {
				unsafe = append(unsafe, n)
			}
		case *ast.Image:
			marked = true
			unsafe = append(unsafe, n)
		}
		return ast.WalkContinue, nil
	})
	if !marked {
		return "", false
	}
	for _, n := range unsafe {
		parent := n.Parent()
		if al, ok := n.(*ast.AutoLink); ok {
			parent.ReplaceChild(parent, n, ast.NewString(al.URL(src)))
			continue
		}
		for c := n.FirstChild(); c != nil; {
			next := c.NextSibling()
			parent.InsertBefore(parent, n, c)
			c = next
		}
		parent.RemoveChild(parent, n)
	}
	var b bytes.Buffer
	if err := md.Renderer().Render(&b, src, doc); err != nil {
		return "", false
	}
	return template.HTML(b.String()), true // goldmark escapes the text and leaves raw HTML out
}

// webURL reports whether a link's address is an http or https one.
func webURL(s string) bool {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return false
	}
	scheme := strings.ToLower(u.Scheme)
	return (scheme == "http" || scheme == "https") && u.Host != ""
}
