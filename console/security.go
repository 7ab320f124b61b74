package console

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// maxBody bounds the body of a request: a form with a plan, its input and
// its mocks.
const maxBody = 8 << 20

// contentSecurityPolicy lets a page load its own stylesheet, script and
// images and nothing else: no inline script or style, no other origin, no
// frame, and forms that post only to the console.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// protect wraps the console's handler with its defences, in order: the
// security headers of every response; on a loopback address, the Host
// header (DNS rebinding); the token; and for a POST, the origin and the
// session token of the form (CSRF). A request refused by one reaches no
// handler.
func (s *Server) protect(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if s.loopback && !loopbackHost(r.Host) {
			refuse(w, http.StatusMisdirectedRequest, "refused: this console answers only at localhost or a loopback address, and the request was addressed to "+
				quoteHost(r.Host)+" (a web page that gave its own name this address would reach it so): open it at the address obelisk serve printed")
			return
		}
		if s.opts.Token != "" {
			if tok := r.URL.Query().Get("token"); tok != "" && r.Method == http.MethodGet {
				s.login(w, r, tok)
				return
			}
			if !s.authorized(r) {
				refuse(w, http.StatusUnauthorized, "refused: this console needs its token: open the address obelisk serve printed (it ends in ?token=…), or send the header Authorization: Bearer TOKEN")
				return
			}
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if err := cop.Check(r); err != nil {
				refuse(w, http.StatusForbidden, "refused: the request did not come from a page of this console (cross-origin): send the form from the console's own page")
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, maxBody)
			if err := parseForm(r); err != nil {
				if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
					refuse(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("refused: the form is larger than %d MiB: send a smaller plan", maxBody>>20))
					return
				}
				refuse(w, http.StatusBadRequest, "refused: the form cannot be read: send it from the console's page")
				return
			}
			if !s.validCSRF(r) {
				refuse(w, http.StatusForbidden, "refused: the form carries no valid session token (the page is older than the console, or came from elsewhere): reload the page and send it again")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// refuse answers a refused request in plain text.
func refuse(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	w.Write([]byte(msg + "\n"))
}

// quoteHost quotes a Host header for a message, escaped and cut short.
func quoteHost(h string) string {
	if len(h) > 80 {
		h = h[:80] + "…"
	}
	return strings.ToValidUTF8(url.PathEscape(h), "?")
}

// loopbackHost reports whether a Host header names this machine:
// localhost or a loopback address, with or without a port.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sign returns the server's signature of a value, for a cookie or a form.
func (s *Server) sign(what string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(what))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (s *Server) authCookie() string    { return "obelisk_auth_" + s.cookie }
func (s *Server) sessionCookie() string { return "obelisk_session_" + s.cookie }

// login checks the token of a page's address; right, it sets the cookie
// that stands for it and sends the browser to the address without it.
func (s *Server) login(w http.ResponseWriter, r *http.Request, tok string) {
	if !equalSecret(tok, s.opts.Token) {
		refuse(w, http.StatusUnauthorized, "refused: the token is wrong: open the address obelisk serve printed")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: s.authCookie(), Value: s.sign("auth"), Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
	u := *r.URL
	q := u.Query()
	q.Del("token")
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
}

// authorized reports whether a request carries the token: as a bearer
// token, or the cookie that login sets.
func (s *Server) authorized(r *http.Request) bool {
	if auth := r.Header.Get("Authorization"); auth != "" {
		tok, ok := strings.CutPrefix(auth, "Bearer ")
		return ok && equalSecret(tok, s.opts.Token)
	}
	c, err := r.Cookie(s.authCookie())
	return err == nil && equalSecret(c.Value, s.sign("auth"))
}

// equalSecret compares two secrets in time that does not depend on where
// they differ.
func equalSecret(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// session returns the request's session, setting a new one's cookie when
// it has none, and the session's CSRF token, which the page's forms carry.
func (s *Server) session(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(s.sessionCookie()); err == nil && len(c.Value) >= 16 && len(c.Value) <= 64 {
		return s.sign("csrf\x00" + c.Value)
	}
	id := randomToken(18)
	http.SetCookie(w, &http.Cookie{Name: s.sessionCookie(), Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
	return s.sign("csrf\x00" + id)
}

// parseForm reads the form of a POST, a multipart one (a plan file) too.
func parseForm(r *http.Request) error {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "multipart/form-data" {
		return r.ParseMultipartForm(maxBody)
	}
	return r.ParseForm()
}

// validCSRF reports whether a POST carries the CSRF token of its
// session's cookie in its form.
func (s *Server) validCSRF(r *http.Request) bool {
	c, err := r.Cookie(s.sessionCookie())
	if err != nil || c.Value == "" {
		return false
	}
	got := r.PostForm.Get("csrf")
	return got != "" && equalSecret(got, s.sign("csrf\x00"+c.Value))
}
