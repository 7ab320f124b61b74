package permission

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Redirects says which redirects a client follows.
type Redirects int

const (
	// SameOrigin follows redirects within the request's origin (scheme,
	// host and port) only.
	SameOrigin Redirects = iota
	// AnyOrigin follows redirects to any host the Net allows; secret
	// headers are not sent past the first origin.
	AnyOrigin
)

// ClientOptions configure a client.
type ClientOptions struct {
	// Redirects says which redirects the client follows (default
	// SameOrigin).
	Redirects Redirects
	// SecretHeaders are headers never sent to another origin than the
	// first request's, besides Authorization, Proxy-Authorization and
	// Cookie, which never are.
	SecretHeaders []string
}

// maxRedirects is how many redirects a client follows, as net/http's
// default.
const maxRedirects = 10

// Client returns an HTTP client that reaches only the hosts n allows: the
// address of every connection is checked when it is dialed, every redirect
// before it is followed. It takes no proxy from the environment. A nil
// *Net gives a client that reaches nothing.
func (n *Net) Client(opts ClientOptions) *http.Client {
	if n == nil {
		n, _ = NewNet(NetOptions{})
	}
	secret := append([]string{"Authorization", "Proxy-Authorization", "Cookie"}, opts.SecretHeaders...)
	return &http.Client{
		Transport: n.transport,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			first := via[0].URL
			crossed := !SameOriginURL(req.URL, first)
			for _, v := range via[1:] {
				crossed = crossed || !SameOriginURL(v.URL, first)
			}
			if crossed {
				if opts.Redirects == SameOrigin {
					return denied(RedirectGrant, nil, "%s redirected to %s, another origin: only redirects within %s are followed (%s)", Origin(via[len(via)-1].URL), Origin(req.URL), Origin(first), RedirectGrant)
				}
				for _, h := range secret {
					req.Header.Del(h)
				}
			}
			return n.Allowed(req.URL)
		},
	}
}

// Origin returns the origin of a URL, scheme://host:port, with the
// scheme's port when it has none: what a redirect and a template are
// compared by. It has no user information, path or query.
func Origin(u *url.URL) string {
	host, port := hostPort(u)
	return strings.ToLower(u.Scheme) + "://" + display(host, port)
}

// SameOriginURL reports whether two URLs have the same origin.
func SameOriginURL(a, b *url.URL) bool {
	return Origin(a) == Origin(b)
}
