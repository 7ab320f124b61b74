package stdlib

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/toolkit/permission"
)

// server is a loopback test server that records the path and headers of
// every request it gets.
type server struct {
	*httptest.Server
	mu  sync.Mutex
	got []*http.Request
}

func newServer(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.got = append(s.got, r.Clone(context.Background()))
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.got...)
}

func (s *server) host() string { return strings.TrimPrefix(s.URL, "http://") }

func grants(t *testing.T, opts permission.NetOptions) *permission.Net {
	t.Helper()
	n, err := permission.NewNet(opts)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func wantDenied(t *testing.T, err error, want string) {
	t.Helper()
	if code(err) != toolkit.CodePermissionDenied || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v; want permission-denied saying %q", err, want)
	}
}

func TestHTTP(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"n": 3, "who": "` + r.Header.Get("X-Who") + `"}`))
		case "/echo":
			b := make([]byte, r.ContentLength)
			r.Body.Read(b)
			w.Write([]byte(r.Method + " " + string(b)))
		case "/fail":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/big":
			w.Write([]byte(strings.Repeat("x", 100)))
		}
	})
	reg := registry(t, Options{Net: grants(t, permission.NetOptions{Allow: []string{srv.host()}}), MaxBodyBytes: 50})
	v, err := reg.Call(context.Background(), "http.get", map[string]any{"url": srv.URL + "/json", "headers": map[string]any{"X-Who": "me"}})
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if m["status"] != int64(200) || !cmp.Equal(m["body"], map[string]any{"n": int64(3), "who": "me"}) {
		t.Errorf("get: %v", m)
	}
	v, err = reg.Call(context.Background(), "http.request", map[string]any{"method": "post", "url": srv.URL + "/echo", "body": map[string]any{"a": int64(1)}})
	if err != nil || v.(map[string]any)["body"] != `POST {"a":1}` {
		t.Errorf("post: %v %v", v, err)
	}
	if _, err := reg.Call(context.Background(), "http.get", map[string]any{"url": srv.URL + "/fail"}); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("server error: %v", err)
	}
	if _, err := reg.Call(context.Background(), "http.get", map[string]any{"url": srv.URL + "/big"}); code(err) != "too-large" {
		t.Errorf("big body: %v", err)
	}
	if _, err := reg.Call(context.Background(), "http.get", map[string]any{"url": "file:///etc/passwd"}); code(err) != toolkit.CodeInvalidArguments {
		t.Errorf("a file URL: %v", err)
	}
}

// TestHTTPGrants: the built-in HTTP tools reach only what the operator
// allows. Each refused call fails with permission-denied, names the host
// and the flag, and sends nothing.
func TestHTTPGrants(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	get := func(n *permission.Net, u string) error {
		_, err := registry(t, Options{Net: n}).Call(context.Background(), "http.get", map[string]any{"url": u})
		return err
	}
	post := func(n *permission.Net, u string) error {
		_, err := registry(t, Options{Net: n}).Call(context.Background(), "http.request", map[string]any{"method": "POST", "url": u, "body": "x"})
		return err
	}
	anyPublic := grants(t, permission.NetOptions{AnyPublic: true})
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"no --allow-net", get(nil, srv.URL+"/x"), "http.get: " + srv.host() + ": the network is off: allow " + srv.host()},
		{"no --allow-net, http.request", post(nil, srv.URL+"/transfer"), "http.request: " + srv.host() + ": the network is off"},
		{"another host allowed", get(grants(t, permission.NetOptions{Allow: []string{"api.example.com"}}), srv.URL), "http.get: " + srv.host() + " is not among the allowed hosts: allow " + srv.host()},
		{"loopback", get(anyPublic, srv.URL), "127.0.0.1:" + port + " is a loopback address, reached only when named: allow 127.0.0.1:" + port},
		{"IPv6 loopback", get(anyPublic, "http://[::1]:"+port+"/"), "is a loopback address"},
		{"IPv4-mapped loopback", get(anyPublic, "http://[::ffff:127.0.0.1]:"+port+"/"), "is a loopback address"},
		{"private", get(anyPublic, "http://10.1.2.3/"), "10.1.2.3:80 is a private address"},
		{"metadata", get(anyPublic, "http://169.254.169.254/latest/meta-data/"), "169.254.169.254:80 is a link-local address"},
		{"a name resolving to loopback", get(anyPublic, "http://localhost:"+port+"/"), "localhost:" + port + " resolves to 127.0.0.1, a loopback address, reached only when named: allow localhost:" + port},
		{"deny beats allow", get(grants(t, permission.NetOptions{Allow: []string{srv.host()}, Deny: []string{"127.0.0.0/8"}}), srv.URL), "is denied by the network's deny list (permission.NetOptions.Deny: 127.0.0.0/8)"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantDenied(t, tc.err, tc.want) })
	}
	if n := len(srv.requests()); n != 0 {
		t.Fatalf("the server got %d requests", n)
	}
	// Named, the same address is reached.
	if err := get(grants(t, permission.NetOptions{Allow: []string{"127.0.0.1"}}), srv.URL+"/named"); err != nil {
		t.Fatal(err)
	}
	if got := srv.requests(); len(got) != 1 || got[0].URL.Path != "/named" {
		t.Fatalf("the server got %v", got)
	}
}

// TestHTTPRedirects: a redirect to a host the grants do not allow is not
// followed; one to another allowed origin is, without the credentials.
func TestHTTPRedirects(t *testing.T) {
	other := newServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "other") })
	var to string
	first := newServer(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, to, http.StatusTemporaryRedirect) })
	headers := map[string]any{"Authorization": "Bearer s3cret", "Cookie": "s=s3cret", "X-Note": "plain"}
	call := func(n *permission.Net) error {
		_, err := registry(t, Options{Net: n}).Call(context.Background(), "http.request", map[string]any{"method": "POST", "url": first.URL, "headers": headers, "body": "b"})
		return err
	}
	onlyFirst := grants(t, permission.NetOptions{Allow: []string{first.host()}})
	for _, target := range []string{other.URL + "/loot", "http://169.254.169.254/latest/meta-data/", "http://localhost:" + other.URL[strings.LastIndexByte(other.URL, ':')+1:]} {
		to = target
		wantDenied(t, call(onlyFirst), "(permission.NetOptions.Allow)")
	}
	if len(other.requests()) != 0 {
		t.Fatal("a redirect reached a host the grants do not allow")
	}
	to = other.URL + "/next"
	if err := call(grants(t, permission.NetOptions{Allow: []string{first.host(), other.host()}})); err != nil {
		t.Fatal(err)
	}
	got := other.requests()
	if len(got) != 1 || got[0].Header.Get("Authorization") != "" || got[0].Header.Get("Cookie") != "" || got[0].Header.Get("X-Note") != "plain" {
		t.Fatalf("the other origin got %v", got)
	}
}
