package httptool

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/toolkit/permission"
)

// The attacks on HTTP tools from a plan's side: arguments that move the
// request to another host or up the path, redirects that carry the
// credentials away, variables the operator did not grant, and secrets
// echoed back to the plan or shown in errors.

// recorder is a loopback server that records every request it gets and
// answers with its handler (200 and "ok" by default).
type recorder struct {
	*httptest.Server
	mu      sync.Mutex
	got     []*http.Request
	handler http.HandlerFunc
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.got = append(r.got, req.Clone(context.Background()))
		h := r.handler
		r.mu.Unlock()
		if h != nil {
			h(w, req)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) requests() []*http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*http.Request(nil), r.got...)
}

func (r *recorder) handle(h http.HandlerFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handler = h
}

func (r *recorder) hostPort() string { return strings.TrimPrefix(r.URL, "http://") }

func toolWith(t *testing.T, block string, opts Options) *Tool {
	t.Helper()
	tool, err := New(toolkit.Definition{Name: "weather.forecast", InputSchema: json.RawMessage(forecastSchema)}, []byte(block), opts)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func wantCode(t *testing.T, err error, code string, want ...string) *toolkit.Error {
	t.Helper()
	var re *toolkit.Error
	if !errors.As(err, &re) || re.Code != code || !re.NotRetryable {
		t.Fatalf("got %v; want a final %s error", err, code)
	}
	for _, w := range want {
		if !strings.Contains(re.Message, w) {
			t.Errorf("the message %q does not say %q", re.Message, w)
		}
	}
	return re
}

// TestHostInjectionRejectedAtLoad: a template where an argument could
// form or change the scheme, user, host or port is refused when the tool
// is made.
func TestHostInjectionRejectedAtLoad(t *testing.T) {
	for _, url := range []string{
		"http://api{city}",
		"http://api{city}/v1",
		"http://api.example.com{city}/x",
		"http://{city}.example.com/",
		"http://{city}/",
		"https://user:{city}@api.example.com/",
		"http://api.example.com:{city}/",
		"{city}/f",
		"{city}",
		"http{city}://api.example.com/",
		"${SCHEME}://api{city}/",
		"https://${HOST}{city}/",
		"http://${HOST}:{city}/",
	} {
		_, err := New(toolkit.Definition{Name: "f", InputSchema: json.RawMessage(forecastSchema)}, []byte(`{"url": "`+url+`"}`), Options{})
		if err == nil || !strings.Contains(err.Error(), "{city} is before the path starts, where it could change the scheme, user, host or port") {
			t.Errorf("%s: got %v; want it refused", url, err)
		}
	}
	for _, url := range []string{"${BASE}{city}", "${BASE}/v1/{city}", "http://api/{city}", "http://api?q={city}", "https://api.example.com:8443/v1/{city}#x"} {
		if _, err := New(toolkit.Definition{Name: "f", InputSchema: json.RawMessage(forecastSchema)}, []byte(`{"url": "`+url+`"}`), Options{}); err != nil {
			t.Errorf("%s: %v", url, err)
		}
	}
}

// TestHostInjectionRefusedAtCall: with ${BASE}{city}, an argument that
// moves the request to another host or port, or adds a user, is refused
// before anything is sent, though the grants allow the other host: the
// attacker's server gets nothing, the bearer token least of all.
func TestHostInjectionRefusedAtCall(t *testing.T) {
	api, attacker := newRecorder(t), newRecorder(t)
	vars := map[string]string{"BASE": api.URL, "TOKEN": "s3cret-token"}
	tool := newTool(t, `{"url": "${BASE}{city}", "headers": {"Authorization": "Bearer ${TOKEN}"}}`, vars)
	_, attackerPort, _ := strings.Cut(attacker.hostPort(), ":")
	for _, city := range []string{"@" + attacker.hostPort() + "/", "@" + attacker.hostPort(), ":" + attackerPort + "/", "x@127.0.0.1:" + attackerPort, ".evil.example/"} {
		_, err := tool.Call(context.Background(), map[string]any{"city": city})
		re := wantCode(t, err, toolkit.CodePermissionDenied, "an argument may not form or change the scheme, user, host or port")
		if strings.Contains(re.Message, "s3cret") {
			t.Errorf("the message shows the token: %s", re.Message)
		}
	}
	if n := len(attacker.requests()) + len(api.requests()); n != 0 {
		t.Fatalf("%d requests were sent", n)
	}
	// With a base URL that has a path, the same template is a path.
	vars["BASE"] = api.URL + "/v1/"
	if _, err := tool.Call(context.Background(), map[string]any{"city": "Oslo"}); err != nil {
		t.Fatal(err)
	}
	if got := api.requests(); len(got) != 1 || got[0].URL.Path != "/v1/Oslo" || got[0].Header.Get("Authorization") != "Bearer s3cret-token" {
		t.Fatalf("the API got %v", got)
	}
}

// TestDotSegments: an argument that makes a path segment of dots, however
// encoded, is refused and nothing is sent; a name with dots in it is not.
func TestDotSegments(t *testing.T) {
	api := newRecorder(t)
	tool := newTool(t, `{"url": "${BASE}/v1/search/{city}/info"}`, map[string]string{"BASE": api.URL})
	for _, city := range []string{"..", ".", "...", "%2e%2e", "%2E%2e", ".%2e", "%252e%252e", "../admin", "..%2fadmin", "./", "a/../b", "..\\admin", "..;", "..;x=1", "%2e%2e%5cadmin"} {
		_, err := tool.Call(context.Background(), map[string]any{"city": city})
		wantCode(t, err, toolkit.CodeInvalidArguments, "which servers read as . or ..")
	}
	dotted := newTool(t, `{"url": "${BASE}/v1/.{city}"}`, map[string]string{"BASE": api.URL})
	_, err := dotted.Call(context.Background(), map[string]any{"city": "."})
	wantCode(t, err, toolkit.CodeInvalidArguments, `the path segment ".."`)
	if n := len(api.requests()); n != 0 {
		t.Fatalf("%d requests were sent", n)
	}
	for _, city := range []string{"a.b", ".hidden", "x..y", "São Paulo/Centro", "...txt"[3:]} {
		if _, err := tool.Call(context.Background(), map[string]any{"city": city}); err != nil {
			t.Errorf("%q: %v", city, err)
		}
	}
	if n := len(api.requests()); n != 5 {
		t.Errorf("%d requests were sent, want 5", n)
	}
}

// TestRedirectsKeepSecrets: a redirect to another origin is not followed
// by default; with "redirects": "any" it is, without the bearer token or
// a header made from the environment.
func TestRedirectsKeepSecrets(t *testing.T) {
	api, other := newRecorder(t), newRecorder(t)
	api.handle(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/collect", http.StatusTemporaryRedirect)
	})
	vars := map[string]string{"BASE": api.URL, "TOKEN": "s3cret-token", "KEY": "k3y-value"}
	block := `{"url": "${BASE}/f/{city}", "headers": {"Authorization": "Bearer ${TOKEN}", "X-Api-Key": "${KEY}", "X-Trace": "{note}"}%s}`
	_, err := newTool(t, fmt.Sprintf(block, ""), vars).Call(context.Background(), map[string]any{"city": "Oslo", "note": "n1"})
	// The base URL is shown by name: it is the value of an environment
	// variable.
	wantCode(t, err, toolkit.CodePermissionDenied, "weather.forecast: GET ${BASE}/f/Oslo: ${BASE} redirected to "+other.URL+", another origin: only redirects within ${BASE} are followed")
	if len(other.requests()) != 0 {
		t.Fatal("the other origin got a request")
	}
	got, err := newTool(t, fmt.Sprintf(block, `, "redirects": "any"`), vars).Call(context.Background(), map[string]any{"city": "Oslo", "note": "n1"})
	if err != nil || got != "ok" {
		t.Fatalf("got %v, %v", got, err)
	}
	reqs := other.requests()
	if len(reqs) != 1 {
		t.Fatalf("the other origin got %d requests", len(reqs))
	}
	for _, h := range []string{"Authorization", "X-Api-Key"} {
		if v := reqs[0].Header.Get(h); v != "" {
			t.Errorf("the other origin got %s: %s", h, v)
		}
	}
	if reqs[0].Header.Get("X-Trace") != "n1" {
		t.Errorf("a header made of arguments was dropped")
	}
	// A redirect to a host the grants do not allow is not followed,
	// whatever the block says.
	n, _ := permission.NewNet(permission.NetOptions{Allow: []string{api.hostPort()}})
	opts := granted(t, vars)
	opts.Net = n
	_, err = toolWith(t, fmt.Sprintf(block, `, "redirects": "any"`), opts).Call(context.Background(), map[string]any{"city": "Oslo"})
	wantCode(t, err, toolkit.CodePermissionDenied, other.hostPort()+" is not among the allowed hosts")
	if len(other.requests()) != 1 {
		t.Fatal("the other origin got a request")
	}
}

// TestSecretsRedacted: the user information of a url from the
// environment, the token and the key appear in no error and no result,
// though the server echoes them.
func TestSecretsRedacted(t *testing.T) {
	api := newRecorder(t)
	echo := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(map[string]any{"auth": r.Header.Get("Authorization"), "url": "http://" + r.Host + r.URL.String(), "key": r.URL.Query().Get("key"),
				r.Header.Get("X-Token"): "a key made of the token", "nested": []any{r.Header.Get("X-Token")}})
		}
	}
	vars := map[string]string{"BASE": "http://admin:pa55word@" + api.hostPort(), "TOKEN": "s3cret-token", "KEY": "k3y/v&lue"}
	tool := newTool(t, `{"url": "${BASE}/f/{city}?key=${KEY}", "headers": {"X-Token": "${TOKEN}"}}`, vars)
	basic := base64.StdEncoding.EncodeToString([]byte("admin:pa55word"))
	secrets := []string{"pa55word", "s3cret-token", "k3y/v&lue", "k3y%2Fv%26lue", basic}
	check := func(what string, v any) {
		t.Helper()
		text := fmt.Sprint(v)
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s shows %q: %s", what, s, text)
			}
		}
	}
	api.handle(echo(200))
	got, err := tool.Call(context.Background(), map[string]any{"city": "Oslo"})
	if err != nil {
		t.Fatal(err)
	}
	check("the result", got)
	if m := got.(map[string]any); m["auth"] != "Basic [redacted]" || m["key"] != "${KEY}" || m["nested"].([]any)[0] != "${TOKEN}" {
		t.Errorf("the result: %v", m)
	}
	if r := api.requests(); len(r) != 1 || r[0].Header.Get("X-Token") != "s3cret-token" {
		t.Fatalf("the server did not get the token: %v", r)
	}
	api.handle(echo(400))
	_, err = tool.Call(context.Background(), map[string]any{"city": "Oslo"})
	re := wantCode(t, err, "http-400")
	check("the error", re.Message)
	if strings.Contains(re.Message, `k3y/v\u0026lue`) {
		t.Errorf("the error shows the key as JSON writes it: %s", re.Message)
	}
	// An error of the connection, from a url whose user is in the
	// environment.
	vars["BASE"] = "http://admin:pa55word@127.0.0.1:1"
	_, err = tool.Call(context.Background(), map[string]any{"city": "Oslo"})
	check("the connection error", err.Error())
	vars["BASE"] = "http://admin:pa55word@[::1"
	_, err = tool.Call(context.Background(), map[string]any{"city": "Oslo"})
	check("the url error", err.Error())
	if err := tool.CheckNet(); err == nil {
		t.Error("CheckNet accepts a url that is not one")
	} else {
		check("CheckNet", err.Error())
	}
}

// TestEnvGrants: a variable the grants do not give is not read, and the
// call says which flag would give it; a deny beats an allow.
func TestEnvGrants(t *testing.T) {
	api := newRecorder(t)
	var read []string
	lookup := func(name string) (string, bool) {
		read = append(read, name)
		return map[string]string{"BASE": api.URL, "TOKEN": "s3cret-token"}[name], true
	}
	block := `{"url": "${BASE}/f/{city}", "headers": {"Authorization": "Bearer ${TOKEN}"}}`
	for _, tc := range []struct {
		env  permission.EnvOptions
		want string
	}{
		{permission.EnvOptions{}, "weather.forecast: the environment grant lacks BASE, TOKEN: allow BASE,TOKEN"},
		{permission.EnvOptions{Allow: []string{"BASE"}}, "weather.forecast: the environment grant lacks TOKEN: allow TOKEN"},
		{permission.EnvOptions{Any: true, Deny: []string{"TOKEN"}}, "weather.forecast: the environment's deny list denies TOKEN"},
		{permission.EnvOptions{Allow: []string{"BASE", "TOKEN"}, Deny: []string{"TOKEN"}}, "the environment's deny list denies TOKEN"},
	} {
		read = nil
		opts := granted(t, nil)
		opts.Env, _ = permission.NewEnv(tc.env)
		opts.LookupEnv = lookup
		tool := toolWith(t, block, opts)
		_, err := tool.Call(context.Background(), map[string]any{"city": "Oslo"})
		wantCode(t, err, toolkit.CodePermissionDenied, tc.want)
		if err := tool.CheckEnv(); err == nil || !strings.Contains(err.Error(), tc.want[strings.Index(tc.want, "the environment"):]) {
			t.Errorf("CheckEnv: %v", err)
		}
		for _, n := range read {
			if n == "TOKEN" {
				t.Errorf("%v: TOKEN was read", tc.env)
			}
		}
	}
	if n := len(api.requests()); n != 0 {
		t.Fatalf("%d requests were sent", n)
	}
}

// TestNetGrants: without a grant for its host, a tool sends nothing, and
// says which flag would allow the host; CheckNet says so before a call.
func TestNetGrants(t *testing.T) {
	api := newRecorder(t)
	vars := map[string]string{"BASE": api.URL}
	for _, tc := range []struct {
		net  *permission.NetOptions
		want string
	}{
		{nil, api.hostPort() + ": the network is off: allow " + api.hostPort()},
		{&permission.NetOptions{Allow: []string{"api.example.com"}}, api.hostPort() + " is not among the allowed hosts: allow " + api.hostPort()},
		{&permission.NetOptions{AnyPublic: true}, api.hostPort() + " is a loopback address, reached only when named: allow " + api.hostPort()},
		{&permission.NetOptions{Allow: []string{"127.0.0.1"}, Deny: []string{api.hostPort()}}, api.hostPort() + " is denied by the network's deny list (permission.NetOptions.Deny: " + api.hostPort() + ")"},
	} {
		opts := granted(t, vars)
		opts.Net = nil
		if tc.net != nil {
			opts.Net, _ = permission.NewNet(*tc.net)
		}
		tool := toolWith(t, `{"url": "${BASE}/f/{city}"}`, opts)
		_, err := tool.Call(context.Background(), map[string]any{"city": "Oslo"})
		wantCode(t, err, toolkit.CodePermissionDenied, "weather.forecast: "+tc.want)
		wantCode(t, tool.CheckNet(), toolkit.CodePermissionDenied, tc.want)
	}
	if n := len(api.requests()); n != 0 {
		t.Fatalf("%d requests were sent", n)
	}
}

// TestWeakSecretsWithheld: a secret that could be an ordinary word
// ("wrong", a user name) is never replaced inside unrelated text, which it
// would garble, and never shown either: a result or an error that holds
// it, as a word or inside one, echoed or not, is withheld whole (code
// secret-withheld, the error's own code kept). Text without it is left as
// it is, and a secret that can be told apart from text is still replaced
// where it occurs, even glued to a word the plan chose.
func TestWeakSecretsWithheld(t *testing.T) {
	api := newRecorder(t)
	vars := map[string]string{"BASE": api.URL, "TOKEN": "wrong", "KEY": "k3y-2f9c!"}
	tool := newTool(t, `{"url": "${BASE}/f/{city}", "headers": {"X-Token": "${TOKEN}", "X-Key": "${KEY}"}}`, vars)
	if got := tool.WeakSecrets(); !slices.Equal(got, []string{"${TOKEN}"}) {
		t.Errorf("WeakSecrets: %q", got)
	}
	answer := func(status int, body string) {
		api.handle(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			io.WriteString(w, body)
		})
	}
	call := func() (any, error) {
		return tool.Call(context.Background(), map[string]any{"city": "Oslo"})
	}
	// Unrelated text keeps every word.
	answer(200, `{"msg": "all good", "key": "x k3y-2f9c!"}`)
	got, err := call()
	if err != nil || !reflect.DeepEqual(got, map[string]any{"msg": "all good", "key": "x ${KEY}"}) {
		t.Errorf("a result without the weak secret: %v, %v", got, err)
	}
	answer(500, `{"error": "the service is down"}`)
	_, err = call()
	var re *toolkit.Error
	if !errors.As(err, &re) || re.Code != "http-500" || !strings.Contains(re.Message, "the service is down") {
		t.Errorf("an error without the weak secret: %v", err)
	}
	// The weak secret, as a word of an unrelated message, echoed, inside a
	// word or glued to one, in a value or a key: withheld whole.
	for _, body := range []string{
		`{"msg": "something went wrong"}`, `{"echo": "wrong"}`, `{"a": "wrong", "b": "x", "c": {"d": "y"}, "e": "z"}`, `{"x": "wrongly"}`, `{"x": ["a", {"y": "xwrongx"}]}`, `{"wrong": 1}`,
	} {
		answer(200, body)
		got, err := call()
		re := wantCode(t, err, "secret-withheld", "${TOKEN}")
		if got != nil || strings.Contains(re.Message, "wrong") {
			t.Errorf("%s: %v, %q", body, got, re.Message)
		}
	}
	answer(401, `{"error": "your token is wrong"}`)
	_, err = call()
	if !errors.As(err, &re) || re.Code != "http-401" || strings.Contains(re.Message, "wrong") || !strings.Contains(re.Message, "withheld") {
		t.Errorf("an error with the weak secret: %v", err)
	}
	// A secret that can be told apart is hidden within text, even glued to
	// the plan's own letters.
	answer(200, `{"x": "abck3y-2f9c!def"}`)
	if got, err := call(); err != nil || !reflect.DeepEqual(got, map[string]any{"x": "abc${KEY}def"}) {
		t.Errorf("a hideable secret inside a word: %v, %v", got, err)
	}
}

// TestHideable: which secrets can be hidden within text.
func TestHideable(t *testing.T) {
	for v, want := range map[string]bool{
		"wrong": false, "admin": false, "password": false, "1234": false, "abc": false, "Passwords": false,
		"pa55word": true, "demo-token": true, "k3y/v&lue": true, "abcdefghijklmnop": true, "short-1": false,
	} {
		if hideable(v) != want {
			t.Errorf("hideable(%q) = %v", v, !want)
		}
	}
}
