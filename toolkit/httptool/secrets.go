package httptool

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/obelisk-plan/obelisk/toolkit"
)

// A secret is hidden within text (replaced where it occurs, the rest of
// the text kept) only when it cannot be mistaken for ordinary text: at
// least wholeSecret bytes, or at least mixedSecret bytes of which one is
// not a letter. Any other value ("wrong", "admin", "1234") could be a
// word or a number of an unrelated message, where replacing it would
// garble the message, and leaving it would let a server's echo hand the
// secret to the plan: a result or an error that holds one is withheld
// whole instead (code secret-withheld), so neither happens.
const (
	wholeSecret = 16
	mixedSecret = 8
)

// codeWithheld is the code of a call whose result or error held a
// secret that cannot be hidden within text.
const codeWithheld = "secret-withheld"

// hideable reports whether a secret can be hidden within text.
func hideable(v string) bool {
	if len(v) >= wholeSecret {
		return true
	}
	return len(v) >= mixedSecret && strings.ContainsFunc(v, func(r rune) bool { return !unicode.IsLetter(r) })
}

// secrets hides a tool's secrets in its errors and results.
type secrets struct {
	r *strings.Replacer // nil when there is nothing to hide
	// weak are the forms of the secrets that cannot be hidden within
	// text, each with what names it.
	weak []pair
}

// pair is a form of a secret and what is shown in its place.
type pair struct{ secret, shown string }

// secrets returns the secrets of the tool, as its environment makes them:
// the values of the variables it reads (shown as ${NAME}), the user
// information of its url, and the values of its credential headers that
// no argument makes (shown as [redacted]). Call it once the grants let the
// tool read its variables.
func (t *Tool) secrets() secrets {
	var pairs, weak []pair
	add := func(secret, shown string) {
		if secret == "" {
			return
		}
		to := &pairs
		if !hideable(secret) {
			to = &weak
		}
		for _, form := range encodings(secret) {
			*to = append(*to, pair{form, shown})
		}
	}
	const hidden = "[redacted]"
	for _, name := range t.Env() {
		v, ok := t.lookup(name)
		if !ok {
			continue
		}
		add(v, "${"+name+"}")
	}
	if _, base, err := t.base(); err == nil && base.User != nil {
		user := base.User.Username()
		pw, _ := base.User.Password()
		add(base.User.String(), hidden)
		add(user+":"+pw, hidden)
		add(base64.StdEncoding.EncodeToString([]byte(user+":"+pw)), hidden) // the Basic Authorization header Go sends
		add(user, hidden)
		add(pw, hidden)
	}
	for _, h := range t.headers {
		if !credential(h.name) {
			continue
		}
		if slices.ContainsFunc(h.value, func(pc piece) bool { return pc.env != "" }) {
			continue // its variables are hidden by name
		}
		if v, ok := h.value.expand(nil, t.lookup, nil); ok { // no argument in it
			add(v, hidden)
			if _, token, ok := strings.Cut(v, " "); ok {
				add(strings.TrimSpace(token), hidden)
			}
		}
	}
	sec := secrets{weak: weak}
	if len(pairs) == 0 {
		return sec
	}
	// The longest first, so that "Bearer s3cret" is hidden whole before
	// "s3cret" is.
	sort.SliceStable(pairs, func(i, j int) bool { return len(pairs[i].secret) > len(pairs[j].secret) })
	args := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		args = append(args, p.secret, p.shown)
	}
	sec.r = strings.NewReplacer(args...)
	return sec
}

// WeakSecrets names the secrets of the tool that cannot be hidden within
// text, as its environment makes them (${NAME}, or [redacted] for the
// user information of its url and its credential headers), each once: a
// result or an error of the tool that holds one is withheld whole. Call
// it once the grants let the tool read its variables, to warn the
// operator before a run.
func (t *Tool) WeakSecrets() []string {
	var names []string
	for _, p := range t.secrets().weak {
		if !slices.Contains(names, p.shown) {
			names = append(names, p.shown)
		}
	}
	return names
}

// encodings returns a secret as it is and as a server may echo it:
// escaped for a URL's query or path, or written in a JSON string.
func encodings(v string) []string {
	out := []string{v, url.QueryEscape(v), url.PathEscape(v)}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	for _, html := range []bool{true, false} {
		b.Reset()
		enc.SetEscapeHTML(html)
		if enc.Encode(v) == nil {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(b.String()), `"`), `"`))
		}
	}
	return out
}

// credential reports whether a header carries credentials.
func credential(name string) bool {
	switch http.CanonicalHeaderKey(name) {
	case "Authorization", "Proxy-Authorization", "Cookie":
		return true
	}
	return false
}

// weakIn returns what names the first secret that cannot be hidden within
// text that s holds, or "".
func (s secrets) weakIn(v string) string {
	for _, p := range s.weak {
		if strings.Contains(v, p.secret) {
			return p.shown
		}
	}
	return ""
}

// text hides the secrets in s. It reports false when s holds a secret
// that cannot be hidden within text: then s must not be shown at all.
func (s secrets) text(v string) (string, bool) {
	if s.weakIn(v) != "" {
		return "", false
	}
	if s.r == nil {
		return v, true
	}
	return s.r.Replace(v), true
}

// withheld is the error of a call whose result or error held the secret
// named shown, which cannot be hidden within text.
func withheld(what, shown string) *toolkit.Error {
	return &toolkit.Error{Code: codeWithheld, NotRetryable: true, Message: fmt.Sprintf(
		"the %s held the value of %s, a secret too short or too plain to be told apart from ordinary text, so it is withheld whole; give a secret of at least %d bytes with a character that is not a letter", what, shown, mixedSecret)}
}

// error returns err with the secrets hidden in its message, as a
// *toolkit.Error (code tool-error for an error without one). A
// cancellation or a deadline of the caller's is passed on as it is. A
// message that holds a secret that cannot be hidden within text is
// withheld; the error keeps its code.
func (s secrets) error(err error) error {
	var re *toolkit.Error
	if err == context.Canceled || err == context.DeadlineExceeded {
		return err
	}
	if !errors.As(err, &re) {
		re = &toolkit.Error{Code: toolkit.CodeToolError, Message: err.Error()}
	}
	msg, ok := s.text(re.Message)
	if !ok {
		w := withheld("error message", s.weakIn(re.Message))
		msg = w.Message
	}
	return &toolkit.Error{Code: re.Code, Message: msg, NotRetryable: re.NotRetryable}
}

// value hides the secrets in the strings of a JSON value: its strings and
// its objects' keys. A value that holds a secret that cannot be hidden
// within text is withheld: value returns an error instead.
func (s secrets) value(v any) (any, error) {
	if s.r == nil && len(s.weak) == 0 {
		return v, nil
	}
	var err error
	var walk func(v any) any
	walk = func(v any) any {
		if err != nil {
			return nil
		}
		switch v := v.(type) {
		case string:
			out, ok := s.text(v)
			if !ok {
				err = withheld("result", s.weakIn(v))
			}
			return out
		case []any:
			for i, e := range v {
				v[i] = walk(e)
			}
			return v
		case map[string]any:
			out := make(map[string]any, len(v))
			for k, e := range v {
				key, _ := walk(k).(string) // nil once withheld
				out[key] = walk(e)
			}
			return out
		}
		return v
	}
	out := walk(v)
	if err != nil {
		return nil, err
	}
	return out, nil
}
