package httptool

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/obelisk-plan/obelisk/toolkit"
)

// minSecret is the length below which a value is not hidden: it would
// garble every message it happens to be part of, and is too short to keep
// anything secret.
const minSecret = 4

// secrets hides a tool's secrets in its errors and results.
type secrets struct {
	r *strings.Replacer // nil when there is nothing to hide
}

// secrets returns the secrets of the tool, as its environment makes them:
// the values of the variables it reads (shown as ${NAME}), the user
// information of its url, and the values of its credential headers that
// no argument makes (shown as [redacted]). Call it once the grants let the
// tool read its variables.
func (t *Tool) secrets() secrets {
	type pair struct{ secret, shown string }
	var pairs []pair
	add := func(secret, shown string) {
		if len(secret) < minSecret {
			return
		}
		for _, form := range encodings(secret) {
			pairs = append(pairs, pair{form, shown})
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
	if len(pairs) == 0 {
		return secrets{}
	}
	// The longest first, so that "Bearer s3cret" is hidden whole before
	// "s3cret" is.
	sort.SliceStable(pairs, func(i, j int) bool { return len(pairs[i].secret) > len(pairs[j].secret) })
	args := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		args = append(args, p.secret, p.shown)
	}
	return secrets{strings.NewReplacer(args...)}
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

// text hides the secrets in s.
func (s secrets) text(v string) string {
	if s.r == nil {
		return v
	}
	return s.r.Replace(v)
}

// error returns err with the secrets hidden in its message, as a
// *toolkit.Error (code tool-error for an error without one). A
// cancellation or a deadline of the caller's is passed on as it is.
func (s secrets) error(err error) error {
	var re *toolkit.Error
	if errors.As(err, &re) {
		return &toolkit.Error{Code: re.Code, Message: s.text(re.Message), NotRetryable: re.NotRetryable}
	}
	if err == context.Canceled || err == context.DeadlineExceeded {
		return err
	}
	return &toolkit.Error{Code: toolkit.CodeToolError, Message: s.text(err.Error())}
}

// value hides the secrets in the strings of a JSON value: its strings and
// its objects' keys.
func (s secrets) value(v any) any {
	if s.r == nil {
		return v
	}
	switch v := v.(type) {
	case string:
		return s.r.Replace(v)
	case []any:
		for i, e := range v {
			v[i] = s.value(e)
		}
		return v
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[s.r.Replace(k)] = s.value(e)
		}
		return out
	}
	return v
}
