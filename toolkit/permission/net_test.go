package permission

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/obelisk-plan/obelisk/toolkit"
)

// recorder is a loopback server that records every request it gets and
// answers 200, or redirects to the URL its next field holds.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	got  []http.Header
	next string
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.got = append(r.got, req.Header.Clone())
		next := r.next
		r.mu.Unlock()
		if next != "" {
			http.Redirect(w, req, next, http.StatusFound)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) requests() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]http.Header(nil), r.got...)
}

func (r *recorder) hostPort() string { return strings.TrimPrefix(r.URL, "http://") }

func (r *recorder) port() string {
	_, p, _ := net.SplitHostPort(r.hostPort())
	return p
}

// fakeDNS resolves the names it holds, and no other.
type fakeDNS map[string][]netip.Addr

func (f fakeDNS) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

var loopbackDNS = fakeDNS{
	"rebind.test": {netip.MustParseAddr("127.0.0.1")},
	"public.test": {netip.MustParseAddr("127.0.0.1")},
	"localhost":   {netip.MustParseAddr("127.0.0.1")},
}

func newNet(t *testing.T, opts NetOptions) *Net {
	t.Helper()
	if opts.Resolver == nil {
		opts.Resolver = loopbackDNS
	}
	n, err := NewNet(opts)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func get(n *Net, opts ClientOptions, u string, header http.Header) error {
	req, err := http.NewRequestWithContext(context.Background(), "GET", u, nil)
	if err != nil {
		return err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := n.Client(opts).Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// wantDenied fails unless err is a *Denial and a permission-denied error
// whose message holds each of want and names the grant in library terms,
// no command line's flag.
func wantDenied(t *testing.T, err error, want ...string) {
	t.Helper()
	var re *toolkit.Error
	if !errors.As(err, &re) || re.Code != toolkit.CodePermissionDenied || !re.NotRetryable {
		t.Fatalf("got %v; want a permission-denied error", err)
	}
	var d *Denial
	if !errors.As(err, &d) || d.Grant == "" || !strings.Contains(re.Message, "("+string(d.Grant)) {
		t.Errorf("%v: want a *Denial whose message names its grant", err)
	}
	if strings.Contains(re.Message, "--") {
		t.Errorf("the message %q names a flag", re.Message)
	}
	for _, w := range want {
		if !strings.Contains(re.Message, w) {
			t.Errorf("the message %q does not say %q", re.Message, w)
		}
	}
}

func TestEntries(t *testing.T) {
	for _, ok := range []string{"example.com", "Example.COM.", "example.com:8443", "*.example.com", "localhost", "127.0.0.1", "127.0.0.1:8080",
		"::1", "[::1]", "[::1]:8080", "10.0.0.0/8", "fd00::/8", "::ffff:127.0.0.0/104", "api_1.internal"} {
		if err := CheckNetEntry(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for entry, want := range map[string]string{
		"":                    "an empty entry",
		"10.0.0.0/33":         "not a CIDR block",
		"10.0.0/8":            "not a CIDR block",
		"http://example.com":  "not a host",
		"user@example.com":    "not a host",
		"example.com:http":    `"http" is not a port`,
		"example.com:0":       `"0" is not a port`,
		"example.com:70000":   `"70000" is not a port`,
		"127.0.0.1:0":         "port 0",
		"exa mple.com":        "not a host",
		"*":                   "leave the list out (permission.NetOptions.AnyPublic)",
		"*.":                  "neither a host name",
		"a..b":                "neither a host name",
		"127.1":               "neither a host name",
		"::1:80:x":            `"x" is not a port`,
		"example.com/path":    "not a CIDR block",
		"ex%61mple.com":       "neither a host name",
		"[::1":                "neither a host name",
		"*.*.example.com":     "neither a host name",
		"xn--bcher-kva.ch:22": "",
	} {
		err := CheckNetEntry(entry)
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", entry, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error with %q", entry, err, want)
		}
	}
	if _, err := NewNet(NetOptions{Deny: []string{"10.0.0.0/40"}}); err == nil || !strings.HasPrefix(err.Error(), "permission.NetOptions.Deny: ") {
		t.Errorf("NewNet with a bad deny entry: %v", err)
	}
}

func TestSpecialAddresses(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1":        "a loopback",
		"127.255.0.9":      "a loopback",
		"::1":              "a loopback",
		"::ffff:127.0.0.1": "a loopback",
		"::ffff:7f00:1":    "a loopback",
		"64:ff9b::7f00:1":  "a loopback", // NAT64 of 127.0.0.1
		"2002:7f00:1::1":   "a loopback", // 6to4 of 127.0.0.1
		"10.1.2.3":         "a private",
		"172.31.255.255":   "a private",
		"192.168.1.1":      "a private",
		"fd12:3456::1":     "a private",
		"::ffff:10.0.0.1":  "a private",
		"100.64.0.1":       "a shared (carrier-grade NAT)",
		"169.254.169.254":  "a link-local",
		"fe80::1%eth0":     "a link-local",
		"0.0.0.0":          "an unspecified",
		"::":               "an unspecified",
		"224.0.0.1":        "a multicast",
		"ff02::1":          "a multicast",
		"255.255.255.255":  "a reserved",
		"::127.0.0.1":      "a reserved",
		"2001::1":          "a reserved",
		"2001:db8::1":      "a documentation",
		"198.18.0.1":       "a benchmarking",
		"8.8.8.8":          "",
		"172.32.0.1":       "",
		"100.128.0.1":      "",
		"2606:4700::1111":  "",
		"64:ff9b::808:808": "", // NAT64 of 8.8.8.8
		"::ffff:8.8.8.8":   "",
	} {
		if got := special(netip.MustParseAddr(addr)); got != want {
			t.Errorf("%s: %q, want %q", addr, got, want)
		}
	}
}

// TestNetworkOff: with no grant, nothing is dialed, not even a host the
// request names.
func TestNetworkOff(t *testing.T) {
	srv := newRecorder(t)
	for _, n := range []*Net{nil, newNet(t, NetOptions{})} {
		wantDenied(t, get(n, ClientOptions{}, srv.URL, nil), "the network is off: allow "+srv.hostPort()+" to reach it (permission.NetOptions.Allow)")
		wantDenied(t, n.Allowed(&url.URL{Scheme: "https", Host: "example.com"}), "example.com:443: the network is off: allow example.com to reach it (permission.NetOptions.Allow)")
	}
	if len(srv.requests()) != 0 {
		t.Fatal("the server got a request")
	}
}

// TestPrivateAddresses: bare --allow-net reaches public hosts only:
// loopback, private and link-local addresses, written as the host or
// resolved from a name, are refused unless named.
func TestPrivateAddresses(t *testing.T) {
	srv := newRecorder(t)
	port := srv.port()
	anyPublic := newNet(t, NetOptions{AnyPublic: true})
	for _, u := range []string{
		"http://127.0.0.1:" + port,
		"http://[::ffff:127.0.0.1]:" + port,
		"http://[::ffff:7f00:1]:" + port,
		"http://localhost:" + port,
		"http://LOCALHOST.:" + port,
		"http://rebind.test:" + port,
		"http://public.test:" + port,
		"http://[::1]:" + port,
		"http://10.0.0.1/",
		"http://169.254.169.254/latest/meta-data/",
		"http://[fd00::1]/",
		"http://0.0.0.0:" + port,
		"http://100.64.0.1/",
	} {
		err := get(anyPublic, ClientOptions{}, u, nil)
		wantDenied(t, err, "address, reached only when named: allow ")
	}
	if n := len(srv.requests()); n != 0 {
		t.Fatalf("the server got %d requests", n)
	}
	wantDenied(t, anyPublic.Allowed(mustURL("http://169.254.169.254/")), "169.254.169.254:80 is a link-local address, reached only when named: allow 169.254.169.254 (permission.NetOptions.Allow)")
	wantDenied(t, get(anyPublic, ClientOptions{}, "http://rebind.test:"+port, nil), "rebind.test:"+port+" resolves to 127.0.0.1, a loopback address, reached only when named: allow rebind.test:"+port+" (permission.NetOptions.Allow)")

	// Named, they are reached: by the address, by a block holding it, by
	// the host's own name.
	for _, tc := range []struct {
		allow []string
		url   string
	}{
		{[]string{"127.0.0.1:" + port}, "http://127.0.0.1:" + port},
		{[]string{"127.0.0.1"}, "http://127.0.0.1:" + port},
		{[]string{"127.0.0.0/8"}, "http://127.0.0.1:" + port},
		{[]string{"::ffff:127.0.0.0/104"}, "http://[::ffff:127.0.0.1]:" + port},
		{[]string{"localhost:" + port}, "http://localhost:" + port},
		{[]string{"rebind.test"}, "http://rebind.test:" + port},
		{[]string{"127.0.0.1"}, "http://127.0.0.1:" + port},
	} {
		n := newNet(t, NetOptions{Allow: tc.allow})
		if err := get(n, ClientOptions{}, tc.url, nil); err != nil {
			t.Errorf("--allow-net=%s, %s: %v", strings.Join(tc.allow, ","), tc.url, err)
		}
	}
	if n := len(srv.requests()); n != 7 {
		t.Errorf("the server got %d requests, want 7", n)
	}
	// A wildcard does not name a private address, nor does a port
	// other than the one asked for.
	for _, allow := range []string{"*.test", "127.0.0.1:1", "rebind.test:1"} {
		n := newNet(t, NetOptions{Allow: []string{allow}})
		wantDenied(t, get(n, ClientOptions{}, "http://rebind.test:"+port, nil))
	}
	if n := len(srv.requests()); n != 7 {
		t.Errorf("the server got %d requests, want 7", n)
	}
}

// TestLists: with a list, a host outside it is refused, named with the
// flag to add; a deny beats an allow, on the name and on the address.
func TestLists(t *testing.T) {
	srv := newRecorder(t)
	port := srv.port()
	n := newNet(t, NetOptions{Allow: []string{"example.com", "*.example.org", "127.0.0.1:" + port}})
	for _, u := range []string{"https://example.com/x", "http://example.com:8080/", "https://a.b.example.org/", "http://127.0.0.1:" + port} {
		if err := n.Allowed(mustURL(u)); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
	for u, want := range map[string]string{
		"https://other.com/x":          "other.com:443 is not among the allowed hosts: allow other.com (permission.NetOptions.Allow)",
		"http://example.org/":          "example.org:80 is not among the allowed hosts",
		"https://example.com.evil.io/": "example.com.evil.io:443 is not among the allowed hosts",
		"https://badexample.com/":      "is not among the allowed hosts",
		"http://localhost:" + port:     "localhost:" + port + " is not among the allowed hosts: allow localhost:" + port + " (permission.NetOptions.Allow)",
		"http://127.0.0.1:1/":          "127.0.0.1:1 is not among the allowed hosts: allow 127.0.0.1:1 (permission.NetOptions.Allow)",
	} {
		wantDenied(t, n.Allowed(mustURL(u)), want)
	}
	wantDenied(t, get(n, ClientOptions{}, "http://localhost:"+port, nil), "is not among the allowed hosts")

	for _, tc := range []struct {
		allow, deny []string
		url, want   string
	}{
		{[]string{"127.0.0.1"}, []string{"127.0.0.1:" + port}, "http://127.0.0.1:" + port, "127.0.0.1:" + port + " is denied by the network's deny list (permission.NetOptions.Deny: 127.0.0.1:" + port + ")"},
		{nil, []string{"public.test"}, "http://public.test:" + port, "is denied by the network's deny list (permission.NetOptions.Deny: public.test)"},
		{[]string{"*.test"}, []string{"*.test"}, "http://public.test:" + port, "is denied by the network's deny list (permission.NetOptions.Deny: *.test)"},
		{[]string{"rebind.test"}, []string{"127.0.0.0/8"}, "http://rebind.test:" + port, "rebind.test:" + port + " resolves to 127.0.0.1, which the network's deny list denies (permission.NetOptions.Deny: 127.0.0.0/8)"},
		{[]string{"::1"}, []string{"::/0"}, "http://[::1]:" + port, "is denied by the network's deny list (permission.NetOptions.Deny: ::/0)"},
	} {
		n := newNet(t, NetOptions{AnyPublic: tc.allow == nil, Allow: tc.allow, Deny: tc.deny})
		wantDenied(t, get(n, ClientOptions{}, tc.url, nil), tc.want)
	}
	if len(srv.requests()) != 0 {
		t.Fatal("the server got a request")
	}
}

// TestRedirects: a redirect to a host the grants do not allow is not
// followed; a redirect to another origin is not followed by default, and
// when it is, secret headers stay behind.
func TestRedirects(t *testing.T) {
	first, second := newRecorder(t), newRecorder(t)
	n := newNet(t, NetOptions{Allow: []string{first.hostPort()}})
	secrets := http.Header{"Authorization": {"Bearer s3cret"}, "X-Api-Key": {"k3y"}, "Cookie": {"session=s3cret"}, "Proxy-Authorization": {"Basic s3cret"}, "X-Trace": {"t1"}}
	for _, to := range []string{second.URL + "/loot", "http://169.254.169.254/latest/meta-data/", "http://localhost:" + second.port() + "/", "http://10.0.0.1/"} {
		first.mu.Lock()
		first.next = to
		first.mu.Unlock()
		err := get(n, ClientOptions{Redirects: AnyOrigin}, first.URL, secrets)
		wantDenied(t, err, "(permission.NetOptions.Allow)")
	}
	if len(second.requests()) != 0 {
		t.Fatal("the second server got a request")
	}

	// Both allowed: by default the redirect is not followed; with
	// AnyOrigin it is, without the secrets.
	n = newNet(t, NetOptions{Allow: []string{first.hostPort(), second.hostPort()}})
	first.next = second.URL + "/next"
	wantDenied(t, get(n, ClientOptions{}, first.URL, secrets), first.URL+" redirected to "+second.URL+", another origin: only redirects within "+first.URL+" are followed")
	if len(second.requests()) != 0 {
		t.Fatal("the second server got a request")
	}
	if err := get(n, ClientOptions{Redirects: AnyOrigin, SecretHeaders: []string{"x-api-key"}}, first.URL, secrets); err != nil {
		t.Fatal(err)
	}
	got := second.requests()
	if len(got) != 1 {
		t.Fatalf("the second server got %d requests", len(got))
	}
	for _, h := range []string{"Authorization", "X-Api-Key", "Cookie", "Proxy-Authorization"} {
		if v := got[0].Get(h); v != "" {
			t.Errorf("the second origin got %s: %s", h, v)
		}
	}
	if got[0].Get("X-Trace") != "t1" {
		t.Errorf("a header that is not secret was dropped: %v", got[0])
	}

	// The same host on another port is another origin, and a redirect
	// back to the first origin after leaving it carries no secret
	// either.
	second.next = first.URL + "/back"
	first.next = ""
	firstBefore := len(first.requests())
	if err := get(n, ClientOptions{Redirects: AnyOrigin}, second.URL, secrets); err != nil {
		t.Fatal(err)
	}
	if all := first.requests(); len(all) != firstBefore+1 || all[len(all)-1].Get("Authorization") != "" {
		t.Errorf("the first server got %v", all[firstBefore:])
	}

	// A redirect within the origin keeps the headers.
	second.next = ""
	first.next = first.URL + "/elsewhere"
	// Redirect once only: the handler redirects again unless next
	// changes, so a server that keeps redirecting is stopped.
	err := get(n, ClientOptions{}, first.URL, secrets)
	if err == nil || !strings.Contains(err.Error(), "stopped after 10 redirects") {
		t.Errorf("got %v; want the redirects stopped", err)
	}
	for _, h := range first.requests()[firstBefore+1:] {
		if h.Get("Authorization") != "Bearer s3cret" {
			t.Fatalf("a redirect within the origin lost the Authorization header")
		}
	}
}

// TestDialsTheCheckedAddress: a name is resolved once, and the connection
// goes to the address that was checked, never to the name (which could
// resolve elsewhere on a second look).
func TestDialsTheCheckedAddress(t *testing.T) {
	lookups := 0
	rebinding := resolverFunc(func(ctx context.Context, network, host string) ([]netip.Addr, error) {
		lookups++
		if lookups == 1 {
			return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil // public, first
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	})
	n := newNet(t, NetOptions{AnyPublic: true, Resolver: rebinding})
	var dialed []string
	n.dial = func(ctx context.Context, network, address string) (net.Conn, error) {
		dialed = append(dialed, address)
		return nil, errors.New("no network in tests")
	}
	if err := get(n, ClientOptions{}, "http://rebind.test/", nil); err == nil || !strings.Contains(err.Error(), "no network in tests") {
		t.Fatalf("first request: %v", err)
	}
	wantDenied(t, get(n, ClientOptions{}, "http://rebind.test/", nil), "resolves to 127.0.0.1, a loopback address")
	if len(dialed) != 1 || dialed[0] != "93.184.215.14:80" {
		t.Errorf("dialed %q; want the checked address once", dialed)
	}
	if lookups != 2 {
		t.Errorf("%d lookups, want one a request", lookups)
	}
}

type resolverFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

func (f resolverFunc) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return f(ctx, network, host)
}

func TestOrigin(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"http://Example.com/a", "http://example.com:80/b?q"},
		{"https://example.com", "https://user:pw@example.com:443/"},
		{"http://[::1]:8080/", "http://[::1]:8080/x"},
	} {
		if !SameOriginURL(mustURL(tc.a), mustURL(tc.b)) {
			t.Errorf("%s and %s: not the same origin", tc.a, tc.b)
		}
	}
	for _, tc := range []struct{ a, b string }{
		{"http://example.com/", "https://example.com/"},
		{"http://example.com/", "http://example.com:8080/"},
		{"http://example.com/", "http://api.example.com/"},
	} {
		if SameOriginURL(mustURL(tc.a), mustURL(tc.b)) {
			t.Errorf("%s and %s: the same origin", tc.a, tc.b)
		}
	}
	if got := Origin(mustURL("https://u:p@Example.COM/x?y")); got != "https://example.com:443" {
		t.Errorf("Origin: %s", got)
	}
}

func TestEnv(t *testing.T) {
	var none *Env
	if none.Granted("HOME") {
		t.Error("a nil Env grants HOME")
	}
	wantDenied(t, none.Check([]string{"B", "A"}), "the environment grant lacks A, B: allow A,B (permission.EnvOptions.Allow)")
	all, _ := NewEnv(EnvOptions{Any: true, Deny: []string{"AWS_SECRET"}})
	if !all.Granted("HOME") || all.Granted("AWS_SECRET") {
		t.Error("bare --allow-env with --deny-env=AWS_SECRET")
	}
	wantDenied(t, all.Check([]string{"HOME", "AWS_SECRET"}), "the environment's deny list denies AWS_SECRET (permission.EnvOptions.Deny)")
	some, _ := NewEnv(EnvOptions{Allow: []string{"TOKEN", "URL"}, Deny: []string{"URL"}})
	if err := some.Check([]string{"TOKEN"}); err != nil {
		t.Error(err)
	}
	wantDenied(t, some.Check([]string{"URL", "OTHER", "TOKEN"}), "the environment grant lacks OTHER: allow OTHER (permission.EnvOptions.Allow); the environment's deny list denies URL (permission.EnvOptions.Deny)")
	for _, bad := range []string{"", "1A", "A-B", "A B", "A=B"} {
		if err := CheckEnvEntry(bad); err == nil {
			t.Errorf("%q is accepted", bad)
		}
	}
	if _, err := NewEnv(EnvOptions{Allow: []string{"A", "A,B"}}); err == nil || !strings.HasPrefix(err.Error(), "permission.EnvOptions.Allow: ") {
		t.Errorf("NewEnv: %v", err)
	}
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}
