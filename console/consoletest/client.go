// Package consoletest is a client of the console for tests: it keeps the
// session's cookies and posts the console's forms as its pages do, with
// their form token, from the console's origin.
package consoletest

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// Client is a browser without a browser: it keeps cookies and does not
// follow redirects, so a test sees them.
type Client struct {
	t testing.TB
	// Base is the console's origin: scheme and host.
	Base string
	// HTTP is the client the requests go through.
	HTTP *http.Client
}

// New returns a client of the console at base (scheme and host).
func New(t testing.TB, base string) *Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Client{t: t, Base: base, HTTP: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// Open returns a client of the console at addr, the address obelisk serve
// prints, and opens it: the address's token then sets the session cookie.
func Open(t testing.TB, addr string) *Client {
	t.Helper()
	u, err := url.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	c := New(t, u.Scheme+"://"+u.Host)
	c.Get(strings.TrimPrefix(addr, c.Base))
	return c
}

// Do sends req and returns the response's status, header and body.
func (c *Client) Do(req *http.Request) (int, http.Header, string) {
	c.t.Helper()
	resp, err := c.HTTP.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// Get gets path and returns the status and body.
func (c *Client) Get(path string) (int, string) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.Base+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	code, _, body := c.Do(req)
	return code, body
}

// Post sends a form to path as a page of the console would, from its
// origin; header adds headers, or removes those given as "".
func (c *Client) Post(path string, form url.Values, header map[string]string) (int, string) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.Base+path, strings.NewReader(form.Encode()))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", c.Base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	code, _, body := c.Do(req)
	return code, body
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// CSRF opens page and returns the session token of its forms.
func (c *Client) CSRF(page string) string {
	c.t.Helper()
	code, body := c.Get(page)
	m := csrfField.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		c.t.Fatalf("GET %s: %d, no form token:\n%s", page, code, body)
	}
	return m[1]
}

// Submit opens page and posts form, with the page's form token, to path.
func (c *Client) Submit(page, path string, form url.Values) (int, string) {
	c.t.Helper()
	form.Set("csrf", c.CSRF(page))
	return c.Post(path, form, nil)
}
