package httptool

import (
	"fmt"
	"net/url"
	"strings"
)

// template is a url or header value: text with {param} and ${ENV}
// placeholders.
type template []piece

// piece is one of: literal text, an argument, an environment variable.
type piece struct {
	lit, param, env string
}

func parseTemplate(s string) (template, error) {
	var t template
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t = append(t, piece{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("%q: ${ without }", s)
			}
			name := s[i+2 : i+end]
			if !envName(name) {
				return nil, fmt.Errorf("%q: ${%s} is not an environment variable name (letters, digits and _)", s, name)
			}
			flush()
			t = append(t, piece{env: name})
			i += end + 1
		case s[i] == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("%q: { without }", s)
			}
			name := s[i+1 : i+end]
			if name == "" || strings.ContainsRune(name, '{') {
				return nil, fmt.Errorf("%q: {%s} does not name a parameter", s, name)
			}
			flush()
			t = append(t, piece{param: name})
			i += end + 1
		case s[i] == '}':
			return nil, fmt.Errorf("%q: } without {", s)
		default:
			lit.WriteByte(s[i])
			i++
		}
	}
	flush()
	return t, nil
}

func envName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// cut splits the template at the first sep in its literal text; after is
// nil when there is none.
func (t template) cut(sep byte) (before, after template) {
	for i, pc := range t {
		if pc.lit == "" {
			continue
		}
		if j := strings.IndexByte(pc.lit, sep); j >= 0 {
			before = append(append(template{}, t[:i]...), litPiece(pc.lit[:j])...)
			after = append(append(template{}, litPiece(pc.lit[j+1:])...), t[i+1:]...)
			return before, after
		}
	}
	return t, nil
}

// split splits the template at every sep in its literal text.
func (t template) split(sep byte) []template {
	var out []template
	for {
		before, after := t.cut(sep)
		out = append(out, before)
		if after == nil {
			return out
		}
		t = after
	}
}

func litPiece(s string) template {
	if s == "" {
		return nil
	}
	return template{{lit: s}}
}

// expand fills the template. Environment variables go in as they are;
// esc formats an argument (v is nil when it is absent), and reports
// whether to go on. Without esc, an absent argument makes expand return
// false and arguments go in as text.
func (t template) expand(args map[string]any, lookup func(string) (string, bool), esc func(p string, v any) (string, bool)) (string, bool) {
	var b strings.Builder
	for _, pc := range t {
		switch {
		case pc.env != "":
			v, _ := lookup(pc.env)
			b.WriteString(v)
		case pc.param != "":
			v := args[pc.param]
			if esc != nil {
				s, ok := esc(pc.param, v)
				if !ok {
					return "", false
				}
				b.WriteString(s)
				continue
			}
			if v == nil {
				return "", false
			}
			b.WriteString(text(v))
		default:
			b.WriteString(pc.lit)
		}
	}
	return b.String(), true
}

// expandQuery fills one key=value pair of the query: none when an argument
// it uses is absent, one per element when an argument is a list.
func (t template) expandQuery(args map[string]any, lookup func(string) (string, bool)) []string {
	var list []any
	for _, pc := range t {
		if pc.param == "" {
			continue
		}
		v := args[pc.param]
		if v == nil {
			return nil
		}
		if l, ok := v.([]any); ok && list == nil {
			list = l
			if len(l) == 0 {
				return nil
			}
		}
	}
	fill := func(elem any) string {
		var b strings.Builder
		listDone := false
		for _, pc := range t {
			switch {
			case pc.env != "":
				v, _ := lookup(pc.env)
				b.WriteString(url.QueryEscape(v))
			case pc.param != "":
				v := args[pc.param]
				if _, ok := v.([]any); ok && !listDone && list != nil {
					v, listDone = elem, true
				}
				b.WriteString(url.QueryEscape(text(v)))
			default:
				b.WriteString(pc.lit)
			}
		}
		return b.String()
	}
	if list == nil {
		return []string{fill(nil)}
	}
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = fill(e)
	}
	return out
}

// checkAuthority reports a parameter that comes before the path of a url
// template starts, where it could form or change the scheme, the user,
// the host or the port: in a literal scheme or authority (http://api{p}/,
// http://{p}.example.com/), or before any text ({p}/x). One that follows
// an environment variable with no / between (${BASE}{p}) is left for the
// call to check, since the variable may hold a path. A literal scheme must
// be http or https.
func (t template) checkAuthority() error {
	afterScheme, sawEnv := false, false
	for i, pc := range t {
		switch {
		case pc.env != "":
			sawEnv = true
		case pc.param != "":
			if afterScheme || !sawEnv {
				return fmt.Errorf("{%s} is before the path starts, where it could change the scheme, user, host or port: put parameters in the path (after a /) or the query", pc.param)
			}
		default:
			lit := pc.lit
			if i == 0 {
				if scheme, _, ok := strings.Cut(lit, "://"); ok && !strings.ContainsAny(scheme, "/?#") {
					if s := strings.ToLower(scheme); s != "http" && s != "https" {
						return fmt.Errorf("the scheme %q: use http or https", scheme)
					}
				}
			}
			if j := strings.Index(lit, "://"); j >= 0 && !strings.ContainsAny(lit[:j], "/?#") {
				afterScheme = true
				lit = lit[j+3:]
			}
			if strings.ContainsAny(lit, "/?#") {
				return nil // the path, query or fragment has started
			}
		}
	}
	return nil
}

// expandPath fills the path part of a url template: arguments
// path-escaped, environment variables as they are. It returns where each
// argument's text is in the path, and the first argument that is absent.
func (t template) expandPath(args map[string]any, lookup func(string) (string, bool)) (path string, spans [][2]int, missing string) {
	var b strings.Builder
	for _, pc := range t {
		switch {
		case pc.env != "":
			v, _ := lookup(pc.env)
			b.WriteString(v)
		case pc.param != "":
			v := args[pc.param]
			if v == nil {
				return "", nil, pc.param
			}
			start := b.Len()
			b.WriteString(url.PathEscape(text(v)))
			spans = append(spans, [2]int{start, b.Len()})
		default:
			b.WriteString(pc.lit)
		}
	}
	return b.String(), spans, ""
}
