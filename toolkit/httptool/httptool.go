// Package httptool calls tools that are HTTP endpoints, as a tools file
// declares them: an MCP-shaped tool definition with an "http" block.
//
//	{
//	  "name": "weather.forecast",
//	  "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]},
//	  "http": {
//	    "method": "GET",
//	    "url": "${WEATHER_URL}/v1/forecast/{city}?days={days}",
//	    "headers": {"Authorization": "Bearer ${WEATHER_TOKEN}"},
//	    "result": "/forecast",
//	    "timeout": "10s"
//	  }
//	}
//
// In the url and the headers, {name} is the argument of that name and
// ${NAME} the environment variable of that name, so that secrets stay in
// the environment and out of plans and tools files. In the path an
// argument is path-escaped and must be a required parameter; in the query
// it is query-escaped, a pair whose argument is absent is left out, and a
// list repeats the pair for each element. An environment variable is
// inserted as it is in the path (it may hold a base URL) and query-escaped
// in the query. A header whose argument is absent is left out.
//
// The body is JSON: "body": "name" sends that argument, "body": ["a", "b"]
// an object of those arguments; without "body", POST, PUT and PATCH send
// the arguments the url and headers do not use, as an object, and other
// methods send none. The response body is the result (JSON decoded, else
// text, null when empty); "result" is a JSON Pointer to the part of it to
// return. A status outside 2xx is an error with code http-STATUS whose
// message holds the status and the start of the body; 408, 425, 429 and
// 5xx may be retried, other statuses may not. "timeout" bounds the call.
//
// # Grants
//
// The tools file says how a tool is called; the operator says what it may
// reach (Options.Net and Options.Env, from --allow-net and --allow-env). A
// tool reads ${NAME} only when Env grants NAME, and reaches its host only
// when Net allows it; otherwise a call fails with code permission-denied,
// naming the variable or the host and the flag that would grant it.
//
// A parameter may not form or change the scheme, user, host or port of
// the url: a template with a {name} before the path starts (in the scheme
// or the authority, or before any text when the url starts with one) is
// refused when the tool is made. A {name} that follows an ${ENV} directly
// (${BASE}{path}) is allowed, for a base URL with a path, and checked when
// the tool is called: the URL the arguments make must have the origin
// (scheme, host and port) and the user information of the url with its
// environment variables and without its arguments, or the call fails with
// permission-denied. An argument in the path that makes a path segment of
// dots ("." or "..", also percent-encoded, after a / or \ it holds, or
// before a ;) is refused with invalid-arguments: servers and proxies
// would read it as a step up or out of the path the template gives.
//
// "redirects" says which redirects are followed: "same-origin" (the
// default) follows those within the url's origin only; "any" follows
// those to any host Net allows, without the Authorization,
// Proxy-Authorization and Cookie headers or a header that holds an ${ENV},
// past the first origin. Every redirect is checked against Net.
//
// # Secrets
//
// The values of the environment variables a tool reads, the user
// information of its url and the values of its Authorization,
// Proxy-Authorization and Cookie headers are secrets: none appears in the
// tool's errors or in the strings of its result (a server that echoes a
// request's headers must not hand its token to the plan). An
// environment variable's value is replaced by ${NAME}, other secrets by
// [redacted]. A secret is replaced within text only when it cannot be
// mistaken for ordinary text (at least 16 bytes, or 8 with a character
// that is not a letter): a shorter or plainer one ("wrong", "admin")
// would garble every unrelated message that holds the same word, so a
// result or an error that holds one is withheld whole instead (code
// secret-withheld), and Tool.WeakSecrets names them for a warning.
package httptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/toolkit/permission"
)

// Options configure HTTP tools.
type Options struct {
	// Net is the network the tools may reach; with none (nil) a call
	// fails with permission-denied.
	Net *permission.Net
	// Env says which environment variables ${NAME} may read; with none
	// (nil) a tool that reads one fails with permission-denied.
	Env *permission.Env
	// LookupEnv reads environment variables (default os.LookupEnv).
	LookupEnv func(name string) (string, bool)
	// MaxBodyBytes bounds a response body (default 10 MiB).
	MaxBodyBytes int64
}

// spec is an "http" block.
type spec struct {
	Method    string            `json:"method"`
	URL       string            `json:"url"`
	Headers   map[string]string `json:"headers"`
	Body      json.RawMessage   `json:"body"`
	Result    string            `json:"result"`
	Timeout   string            `json:"timeout"`
	Redirects string            `json:"redirects"`
}

var specKeys = []string{"method", "url", "headers", "body", "result", "timeout", "redirects"}

// Tool is an HTTP tool; it implements toolkit.Tool.
type Tool struct {
	name    string
	method  string
	path    template
	query   []template
	headers []header
	// body: bodyRest sends the unused arguments, bodyOne one argument,
	// bodyList an object of some; bodyNone nothing.
	bodyKind int
	bodyArgs []string
	used     map[string]bool
	result   []string // JSON Pointer tokens
	timeout  time.Duration
	opts     Options
	client   *http.Client
}

type header struct {
	name  string
	value template
}

const (
	bodyNone = iota
	bodyRest
	bodyOne
	bodyList
)

var methods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "OPTIONS": true}

// New makes the tool def describes from its "http" block. It reports what
// is wrong with the block: an unknown key, an unknown method, a
// placeholder that names no parameter, a path parameter that is optional,
// a parameter in the scheme or the authority of the url.
func New(def toolkit.Definition, block []byte, opts Options) (*Tool, error) {
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 10 << 20
	}
	var sp spec
	dec := json.NewDecoder(bytes.NewReader(block))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sp); err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return nil, fmt.Errorf("unknown key %s in the http block; known keys: %s", name, strings.Join(specKeys, ", "))
		}
		return nil, fmt.Errorf("the http block: %w", err)
	}
	params, required, err := parameters(def.InputSchema)
	if err != nil {
		return nil, err
	}
	t := &Tool{name: def.Name, method: strings.ToUpper(sp.Method), used: map[string]bool{}, opts: opts}
	if t.method == "" {
		t.method = http.MethodGet
	}
	if !methods[t.method] {
		return nil, fmt.Errorf("method %q: use GET, POST, PUT, PATCH, DELETE, HEAD or OPTIONS", sp.Method)
	}
	if sp.URL == "" {
		return nil, errors.New("the http block has no \"url\"")
	}
	checkParam := func(where, p string) error {
		if !params[p] {
			return fmt.Errorf("%s: {%s} is not a parameter of %s%s", where, p, def.Name, paramList(params))
		}
		t.used[p] = true
		return nil
	}
	whole, err := parseTemplate(sp.URL)
	if err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	if err := whole.checkAuthority(); err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	path, query := whole.cut('?')
	t.path = path
	for _, pc := range path {
		if pc.param == "" {
			continue
		}
		if err := checkParam("url", pc.param); err != nil {
			return nil, err
		}
		if !required[pc.param] {
			return nil, fmt.Errorf("url: {%s} is in the path, so it must be a required parameter of %s (put optional parameters in the query)", pc.param, def.Name)
		}
	}
	if query != nil {
		query, _ = query.cut('#')
		for _, pair := range query.split('&') {
			for _, pc := range pair {
				if pc.param != "" {
					if err := checkParam("url", pc.param); err != nil {
						return nil, err
					}
				}
			}
			if len(pair) > 0 {
				t.query = append(t.query, pair)
			}
		}
	}
	names := make([]string, 0, len(sp.Headers))
	for n := range sp.Headers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !validHeaderName(n) {
			return nil, fmt.Errorf("headers: %q is not a header name", n)
		}
		v, err := parseTemplate(sp.Headers[n])
		if err != nil {
			return nil, fmt.Errorf("headers: %s: %w", n, err)
		}
		for _, pc := range v {
			if pc.param != "" {
				if err := checkParam("headers: "+n, pc.param); err != nil {
					return nil, err
				}
			}
		}
		t.headers = append(t.headers, header{n, v})
	}
	if err := t.parseBody(sp.Body, params, paramList(params)); err != nil {
		return nil, err
	}
	if sp.Result != "" {
		if !strings.HasPrefix(sp.Result, "/") {
			return nil, fmt.Errorf("result: %q is not a JSON Pointer: it starts with / (\"/data/items\")", sp.Result)
		}
		for _, tok := range strings.Split(sp.Result[1:], "/") {
			t.result = append(t.result, strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~"))
		}
	}
	if sp.Timeout != "" {
		d, err := time.ParseDuration(sp.Timeout)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("timeout: %q is not a duration such as 10s", sp.Timeout)
		}
		t.timeout = d
	}
	copts := permission.ClientOptions{SecretHeaders: t.envHeaders()}
	switch sp.Redirects {
	case "", "same-origin":
	case "any":
		copts.Redirects = permission.AnyOrigin
	default:
		return nil, fmt.Errorf("redirects: %q: use \"same-origin\" (the default) or \"any\"", sp.Redirects)
	}
	t.client = opts.Net.Client(copts)
	return t, nil
}

// envHeaders returns the names of the headers that hold an environment
// variable.
func (t *Tool) envHeaders() []string {
	var out []string
	for _, h := range t.headers {
		if slices.ContainsFunc(h.value, func(pc piece) bool { return pc.env != "" }) {
			out = append(out, h.name)
		}
	}
	return out
}

func (t *Tool) parseBody(raw json.RawMessage, params map[string]bool, list string) error {
	if len(raw) == 0 || string(raw) == "null" {
		switch t.method {
		case http.MethodPost, http.MethodPut, http.MethodPatch:
			t.bodyKind = bodyRest
		}
		return nil
	}
	var one string
	var some []string
	switch {
	case json.Unmarshal(raw, &one) == nil:
		t.bodyKind, some = bodyOne, []string{one}
	case json.Unmarshal(raw, &some) == nil:
		t.bodyKind = bodyList
	default:
		return fmt.Errorf("body: %s is neither a parameter name nor a list of them", raw)
	}
	for _, p := range some {
		if !params[p] {
			return fmt.Errorf("body: %s is not a parameter of %s%s", p, t.name, list)
		}
	}
	t.bodyArgs = some
	return nil
}

// parameters reads the parameter names of an input schema and which are
// required.
func parameters(schema json.RawMessage) (params, required map[string]bool, err error) {
	params, required = map[string]bool{}, map[string]bool{}
	if len(schema) == 0 {
		return params, required, nil
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, nil, fmt.Errorf("the input schema: %w", err)
	}
	for p := range s.Properties {
		params[p] = true
	}
	for _, r := range s.Required {
		required[r] = true
	}
	return params, required, nil
}

func paramList(params map[string]bool) string {
	if len(params) == 0 {
		return " (it has none)"
	}
	names := make([]string, 0, len(params))
	for p := range params {
		names = append(names, p)
	}
	sort.Strings(names)
	return " (its parameters: " + strings.Join(names, ", ") + ")"
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

// Env returns the environment variables the tool reads, sorted.
func (t *Tool) Env() []string {
	seen := map[string]bool{}
	add := func(tp template) {
		for _, pc := range tp {
			if pc.env != "" {
				seen[pc.env] = true
			}
		}
	}
	add(t.path)
	for _, q := range t.query {
		add(q)
	}
	for _, h := range t.headers {
		add(h.value)
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// MissingEnv returns the environment variables the tool reads, of those
// the grants let it read, that are not set, sorted.
func (t *Tool) MissingEnv() []string {
	var out []string
	for _, n := range t.Env() {
		if !t.opts.Env.Granted(n) {
			continue
		}
		if _, ok := t.opts.LookupEnv(n); !ok {
			out = append(out, n)
		}
	}
	return out
}

// lookup reads an environment variable, if the grants let the tool read
// it.
func (t *Tool) lookup(name string) (string, bool) {
	if !t.opts.Env.Granted(name) {
		return "", false
	}
	return t.opts.LookupEnv(name)
}

// CheckEnv reports whether the grants let the tool read every environment
// variable it reads: nil, or a permission-denied error that names those
// they do not and the flag that would grant them.
func (t *Tool) CheckEnv() error {
	return t.opts.Env.Check(t.Env())
}

// CheckNet reports whether the grants let the tool reach the host of its
// url, as its environment variables make it: nil, or a permission-denied
// error that names the host and the flag that would allow it. The
// addresses a host name resolves to are checked when a call dials them.
// It is meaningful once CheckEnv and MissingEnv find nothing.
func (t *Tool) CheckNet() error {
	_, base, err := t.base()
	if err == nil {
		err = t.opts.Net.Allowed(base)
	}
	if err != nil {
		return t.secrets().error(err)
	}
	return nil
}

// Call sends the request the arguments make and returns the response's
// result, with the tool's secrets taken out of it and of its errors.
func (t *Tool) Call(ctx context.Context, args map[string]any) (any, error) {
	if err := t.CheckEnv(); err != nil {
		return nil, prefixed(t.name, err)
	}
	if missing := t.MissingEnv(); len(missing) > 0 {
		return nil, &toolkit.Error{Code: "missing-env", Message: fmt.Sprintf("%s needs the environment variable %s, which is not set", t.name, strings.Join(missing, ", ")), NotRetryable: true}
	}
	sec := t.secrets()
	out, err := t.call(ctx, args)
	if err != nil {
		if err == ctx.Err() {
			return nil, err // the step's own deadline or cancellation
		}
		return nil, sec.error(err)
	}
	return sec.value(out)
}

func (t *Tool) call(ctx context.Context, args map[string]any) (any, error) {
	u, err := t.url(args)
	if err != nil {
		return nil, err
	}
	if err := t.opts.Net.Allowed(u); err != nil {
		return nil, prefixed(t.name, err)
	}
	var body io.Reader
	if b, ok, err := t.body(args); err != nil {
		return nil, err
	} else if ok {
		body = bytes.NewReader(b)
	}
	callCtx := ctx
	if t.timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, t.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(callCtx, t.method, u.String(), body)
	if err != nil {
		return nil, &toolkit.Error{Code: toolkit.CodeInvalidArguments, Message: fmt.Sprintf("%s: %v", t.name, err), NotRetryable: true}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "obelisk")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range t.headers {
		v, ok := h.value.expand(args, t.lookup, nil)
		if ok {
			req.Header.Set(h.name, v)
		}
	}
	where := t.method + " " + redact(u)
	resp, err := t.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err() // the step's own deadline or cancellation
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, &toolkit.Error{Code: toolkit.CodeTimeout, Message: fmt.Sprintf("%s: no answer within %s", where, t.timeout)}
		}
		var re *toolkit.Error
		if errors.As(err, &re) {
			return nil, prefixed(t.name+": "+where, re) // a host or a redirect the grants refuse
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message repeats the whole URL, query included
		}
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, t.opts.MaxBodyBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s: reading the response: %w", where, err)
	}
	if int64(len(raw)) > t.opts.MaxBodyBytes {
		return nil, &toolkit.Error{Code: "too-large", Message: fmt.Sprintf("%s: the response is larger than %d bytes", where, t.opts.MaxBodyBytes), NotRetryable: true}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := fmt.Sprintf("%s: %s", where, resp.Status)
		if ex := toolkit.Excerpt(raw, 200); ex != "" {
			msg += ": " + ex
		}
		return nil, &toolkit.Error{Code: "http-" + strconv.Itoa(resp.StatusCode), Message: msg, NotRetryable: !retryable(resp.StatusCode)}
	}
	out := toolkit.DecodeJSONOrText(raw)
	if _, text := out.(string); text && strings.Contains(resp.Header.Get("Content-Type"), "json") {
		if _, err := toolkit.DecodeJSON(raw); err != nil {
			return nil, &toolkit.Error{Code: toolkit.CodeInvalidOutput, Message: fmt.Sprintf("%s: the response says it is JSON but is not: %v", where, err)}
		}
	}
	return t.selectResult(out, where)
}

// prefixed returns a tool's error with its message prefixed.
func prefixed(prefix string, err error) error {
	var re *toolkit.Error
	if !errors.As(err, &re) {
		return fmt.Errorf("%s: %w", prefix, err)
	}
	return &toolkit.Error{Code: re.Code, Message: prefix + ": " + re.Message, NotRetryable: re.NotRetryable}
}

// retryable reports whether a request that got status may succeed if
// sent again.
func retryable(status int) bool {
	return status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooEarly || status == http.StatusTooManyRequests
}

// base returns the url with its environment variables and without its
// arguments: the URL whose origin and user every call's URL must have.
// It returns the URL's text too.
func (t *Tool) base() (string, *url.URL, error) {
	s, _ := t.path.expand(nil, t.lookup, func(string, any) (string, bool) { return "", true })
	u, err := url.Parse(s)
	if err == nil && (u.Scheme != "http" && u.Scheme != "https" || u.Host == "") {
		err = errors.New("it is not an http or https URL with a host")
	}
	if err != nil {
		return "", nil, &toolkit.Error{Code: toolkit.CodeInvalidArguments, Message: fmt.Sprintf("%s: the url %s: %v", t.name, redactText(s), err), NotRetryable: true}
	}
	return s, u, nil
}

// authority returns the start of a URL up to the end of its authority:
// scheme, user, host and port.
func authority(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		return ""
	}
	if j := strings.IndexAny(s[i+3:], "/?#"); j >= 0 {
		return s[:i+3+j]
	}
	return s
}

// url expands the url template. The URL must have the origin and the user
// of the url without its arguments, and no argument may make a path
// segment of dots.
func (t *Tool) url(args map[string]any) (*url.URL, error) {
	path, spans, missing := t.path.expandPath(args, t.lookup)
	if missing != "" {
		return nil, &toolkit.Error{Code: toolkit.CodeInvalidArguments, Message: fmt.Sprintf("%s: the url needs the argument %s", t.name, missing), NotRetryable: true}
	}
	baseText, base, err := t.base()
	if err != nil {
		return nil, err
	}
	if a := authority(baseText); !strings.HasPrefix(path, a) || len(path) > len(a) && !strings.ContainsRune("/?#", rune(path[len(a)])) {
		return nil, &toolkit.Error{Code: toolkit.CodePermissionDenied, NotRetryable: true,
			Message: fmt.Sprintf("%s: the arguments would change the host or port of its url (%s): an argument may not form or change the scheme, user, host or port", t.name, permission.Origin(base))}
	}
	var pairs []string
	for _, q := range t.query {
		pairs = append(pairs, q.expandQuery(args, t.lookup)...)
	}
	full := path
	if len(pairs) > 0 {
		full += "?" + strings.Join(pairs, "&")
	}
	u, err := url.Parse(full)
	if err == nil && (u.Scheme != "http" && u.Scheme != "https" || u.Host == "") {
		err = errors.New("it is not an http or https URL with a host")
	}
	if err != nil {
		return nil, &toolkit.Error{Code: toolkit.CodeInvalidArguments, Message: fmt.Sprintf("%s: the url %s: %v", t.name, redactText(path), err), NotRetryable: true}
	}
	if permission.Origin(u) != permission.Origin(base) || u.User.String() != base.User.String() {
		return nil, &toolkit.Error{Code: toolkit.CodePermissionDenied, NotRetryable: true,
			Message: fmt.Sprintf("%s: the arguments would send the request to %s, not to %s, the origin of its url: an argument may not form or change the scheme, user, host or port", t.name, permission.Origin(u), permission.Origin(base))}
	}
	if seg := dotSegment(path, spans); seg != "" {
		return nil, &toolkit.Error{Code: toolkit.CodeInvalidArguments, NotRetryable: true,
			Message: fmt.Sprintf("%s: the arguments make the path segment %q, which servers read as . or ..: give a name, not a step up or out of the path", t.name, seg)}
	}
	return u, nil
}

// dotSegment returns the first segment of a path that an argument is part
// of and that is made of dots alone ("." or ".."), however it is written:
// percent-encoded, once or more; with / or \ inside it, which some
// servers decode and split at; or before a ; (path parameters). "" when
// there is none.
func dotSegment(path string, spans [][2]int) string {
	for start := 0; start <= len(path); {
		end := strings.IndexByte(path[start:], '/')
		if end < 0 {
			end = len(path)
		} else {
			end += start
		}
		seg := path[start:end]
		if slices.ContainsFunc(spans, func(s [2]int) bool { return s[0] < end && s[1] > start }) && dots(seg) {
			return seg
		}
		start = end + 1
	}
	return ""
}

// dots reports whether a segment, decoded, is or holds a name made of dots
// alone.
func dots(seg string) bool {
	for range 8 {
		d, err := url.PathUnescape(seg)
		if err != nil || d == seg {
			break
		}
		seg = d
	}
	for _, name := range strings.FieldsFunc(seg, func(r rune) bool { return r == '/' || r == '\\' }) {
		name, _, _ = strings.Cut(name, ";")
		if name != "" && strings.Trim(name, ".") == "" {
			return true
		}
	}
	return false
}

// body returns the request body, if the request has one.
func (t *Tool) body(args map[string]any) ([]byte, bool, error) {
	var v any
	switch t.bodyKind {
	case bodyNone:
		return nil, false, nil
	case bodyOne:
		a, ok := args[t.bodyArgs[0]]
		if !ok {
			return nil, false, nil
		}
		v = a
	case bodyList:
		m := map[string]any{}
		for _, p := range t.bodyArgs {
			if a, ok := args[p]; ok {
				m[p] = a
			}
		}
		v = m
	case bodyRest:
		m := map[string]any{}
		for p, a := range args {
			if !t.used[p] {
				m[p] = a
			}
		}
		v = m
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false, &toolkit.Error{Code: toolkit.CodeInvalidArguments, Message: fmt.Sprintf("%s: the body: %v", t.name, err), NotRetryable: true}
	}
	return b, true, nil
}

// selectResult follows the result pointer into the response.
func (t *Tool) selectResult(v any, where string) (any, error) {
	for i, tok := range t.result {
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, t.noPart(where, i)
			}
			v = next
		case []any:
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || n >= len(c) {
				return nil, t.noPart(where, i)
			}
			v = c[n]
		default:
			return nil, t.noPart(where, i)
		}
	}
	return v, nil
}

func (t *Tool) noPart(where string, i int) error {
	return &toolkit.Error{Code: toolkit.CodeInvalidOutput, Message: fmt.Sprintf("%s: the response has no /%s", where, strings.Join(t.result[:i+1], "/"))}
}

// text formats an argument for a URL or a header: strings as they are,
// numbers and booleans as JSON writes them, lists and objects as JSON.
func text(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// redact returns a URL without its user, query and fragment, which may
// hold secrets, for messages.
func redact(u *url.URL) string {
	return u.Scheme + "://" + u.Host + u.EscapedPath()
}

func redactText(s string) string {
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		return redact(u)
	}
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	return s
}
