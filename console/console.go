// Package console serves a web console for the runs of a journal: the
// runs, each run's graph with its steps coloured by status as they change,
// the approvals runs wait for, to approve or reject in the page, and a
// page that checks and dry-runs a plan without running it.
//
// The console reads the journal of a state directory (package durable),
// which any number of processes write: a run started in a terminal shows
// up in the page and its steps change colour as they finish. A decision
// made in the page is the record `obelisk approve` makes (durable's
// Store.Decide), once only; the run then goes on when a process resumes
// it, with that process's tools and grants. The console calls no tool.
//
// It is safe by default: on a loopback address it answers only requests
// addressed to localhost or a loopback address (so a web page cannot
// reach it through a name of its own, DNS rebinding); on any other address
// it requires a token, given or generated. Every request that records
// something is a POST that must carry the page's session token and come
// from the console's own origin. Every value from a plan or a tool is
// escaped for HTML by html/template, with the characters that could hide
// or reorder text shown as escapes, and the pages run no inline script
// (a Content-Security-Policy forbids it). The assets are embedded: it
// needs no network.
package console

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/durable"
)

//go:embed assets
var assets embed.FS

// Options configure a console.
type Options struct {
	// Token, when set, is required of every request: as the token query
	// parameter of the first page opened (which sets a cookie), or as
	// "Authorization: Bearer TOKEN". On an address that is not loopback a
	// console always has one: New generates it when Token is "".
	Token string
	// Check configures the checking of the plans pasted or opened on the
	// plan page: the operator's tools (the built-in tools' definitions,
	// the tools files). Imports are never read there: a plan from the page
	// has no directory, and the page reads no file of the server's.
	Check compiler.Config
	// MaxParallel is the parallelism the plan page's estimates and dry
	// runs assume (default 8).
	MaxParallel int
	// Poll is how often a page that watches runs looks for changes in the
	// journal (default 500ms).
	Poll time.Duration
	// ErrorLog receives errors the pages meet (default: the standard
	// logger).
	ErrorLog *log.Logger
}

// minToken is the shortest token accepted.
const minToken = 16

// Server is a console of a journal, bound to a listener.
type Server struct {
	store *durable.Store
	ln    net.Listener
	opts  Options
	// loopback is set when the listener is on a loopback address.
	loopback bool
	// key signs the session and authentication cookies; it is made anew
	// for each server, so that its cookies are worth nothing to another.
	key []byte
	// cookie suffixes the names of the cookies: the port, since cookies
	// are shared by every port of a host.
	cookie string
	pages  *template.Template
	static fs.FS
	mux    *http.ServeMux

	// programs caches the compiled plans of runs, by run.
	mu       sync.Mutex
	programs map[string]*compiled
	// checking bounds the plans the plan page checks at once.
	checking chan struct{}
	// watchers bounds the pages that watch the journal at once.
	watchers chan struct{}
}

// New returns the console of the journal of store, to be served on ln.
// On an address that is not loopback, a console without a token gets one
// generated (see Token). A token shorter than 16 characters is refused.
func New(store *durable.Store, ln net.Listener, opts Options) (*Server, error) {
	if opts.Token != "" && len(opts.Token) < minToken {
		return nil, fmt.Errorf("the token is %d characters long: give at least %d, or none to have one generated", len(opts.Token), minToken)
	}
	if opts.Poll <= 0 {
		opts.Poll = 500 * time.Millisecond
	}
	if opts.MaxParallel <= 0 {
		opts.MaxParallel = 8
	}
	if opts.ErrorLog == nil {
		opts.ErrorLog = log.Default()
	}
	opts.Check.Imports = nil
	s := &Server{store: store, ln: ln, opts: opts, programs: map[string]*compiled{},
		checking: make(chan struct{}, 2), watchers: make(chan struct{}, 64)}
	tcp, _ := ln.Addr().(*net.TCPAddr)
	s.loopback = tcp != nil && tcp.IP.IsLoopback()
	if tcp != nil {
		s.cookie = fmt.Sprint(tcp.Port)
	}
	if !s.loopback && s.opts.Token == "" {
		s.opts.Token = randomToken(24)
	}
	s.key = make([]byte, 32)
	rand.Read(s.key)
	var err error
	if s.pages, err = parsePages(); err != nil {
		return nil, err
	}
	if s.static, err = fs.Sub(assets, "assets/static"); err != nil {
		return nil, err
	}
	s.routes()
	return s, nil
}

// randomToken returns n random bytes in URL-safe base64.
func randomToken(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Token returns the token the console requires, or "" for none.
func (s *Server) Token() string { return s.opts.Token }

// URL returns the address to open the console at, with its token.
func (s *Server) URL() string {
	host := s.ln.Addr().String()
	if tcp, ok := s.ln.Addr().(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		host = net.JoinHostPort("localhost", fmt.Sprint(tcp.Port))
	}
	u := url.URL{Scheme: "http", Host: host, Path: "/"}
	if s.opts.Token != "" {
		u.RawQuery = url.Values{"token": {s.opts.Token}}.Encode()
	}
	return u.String()
}

// Handler returns the console's handler, for a server of the caller's.
func (s *Server) Handler() http.Handler { return s.protect(s.mux) }

// Serve serves the console on its listener until ctx is done, then shuts
// it down, giving the requests under way a few seconds to end.
func (s *Server) Serve(ctx context.Context) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          s.opts.ErrorLog,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(s.ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = srv.Close()
	}
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
