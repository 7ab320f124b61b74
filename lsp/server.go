// Package lsp is the language server of Obelisk plans: diagnostics as
// you type, hover, completion, go to definition, references, rename,
// formatting, document symbols and quick fixes, for .plan text and JSON
// plans, over the Language Server Protocol.
//
// Every document goes from text to checked plan through
// compiler/planfile, as a plan does for `obelisk check`, with the tools
// the operator gives in Options: the server never reads a tool, a host or
// a program from a plan's text, and never calls a tool. Serve runs the
// server on a connection; `obelisk lsp` runs it on standard input and
// output.
package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
)

// Options configure the server.
type Options struct {
	// Config is the checker's configuration every document is checked
	// with: the operator's tools, hints, strictness and limits. Its
	// Imports are replaced by each document's directory.
	Config compiler.Config
	// ToolFiles are the operator's tools files (toolset.Set.Files), for
	// go to definition of their tools; a file's name is its path.
	ToolFiles []planfile.File
	// Debounce is how long the server waits after an edit before it
	// checks the document again (150 ms when zero).
	Debounce time.Duration
	// Version is the server's version, as initialize reports it.
	Version string
	// Log receives what the server has to say besides the protocol; nil
	// discards it.
	Log *slog.Logger
}

// Serve runs the language server on conn until the client exits, conn
// is closed or ctx is done. It returns nil after an orderly shutdown and
// exit.
func Serve(ctx context.Context, conn io.ReadWriteCloser, opts Options) error {
	s := newServer(opts)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := jsonrpc2.NewConn(ctx, jsonrpc2.NewBufferedStream(conn, jsonrpc2.VSCodeObjectCodec{}), jsonrpc2.HandlerWithError(s.handle).SuppressErrClosed())
	s.mu.Lock()
	s.conn = c
	s.mu.Unlock()
	defer s.stop()
	select {
	case <-ctx.Done():
		c.Close()
		return ctx.Err()
	case <-c.DisconnectNotify():
	case <-s.exited:
		c.Close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.shutdown {
		return errors.New("the client left without shutting the server down")
	}
	return nil
}

// server is the state of one connection.
type server struct {
	opts  Options
	log   *slog.Logger
	tools map[string]toolSite
	// exited is closed by the exit notification.
	exited chan struct{}

	mu       sync.Mutex
	conn     *jsonrpc2.Conn
	docs     map[string]*document
	shutdown bool
	// publish, when set, replaces sending diagnostics to the client (the
	// tests' hook).
	publish func(publishDiagnosticsParams)
}

// toolSite is where the operator's tools file declares a tool.
type toolSite struct {
	file string
	text *text
	span lang.Span
}

// document is an open document.
type document struct {
	uri, path, dir string

	mu      sync.Mutex
	version int
	text    *text
	// last is the analysis of the latest version analysed; good the
	// latest that got as far as the checker, for completion while the
	// text does not parse.
	last, good *analysis
	timer      *time.Timer
}

func newServer(opts Options) *server {
	if opts.Debounce <= 0 {
		opts.Debounce = 150 * time.Millisecond
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &server{opts: opts, log: log, docs: map[string]*document{}, exited: make(chan struct{}), tools: map[string]toolSite{}}
	for _, f := range opts.ToolFiles {
		decls, _ := lang.ParseTools(f.Name, []byte(f.Text))
		t := newText(f.Text)
		for _, d := range decls {
			if d.Name != nil {
				if _, dup := s.tools[d.Name.Name]; !dup {
					s.tools[d.Name.Name] = toolSite{file: f.Name, text: t, span: d.Span}
				}
			}
		}
	}
	return s
}

// stop ends the documents' pending checks.
func (s *server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.docs {
		d.mu.Lock()
		if d.timer != nil {
			d.timer.Stop()
		}
		d.mu.Unlock()
	}
}

// errNoDocument answers a request about a document that is not open.
var errNoDocument = &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: "the document is not open"}

// handle answers one request or notification. It never panics: a
// failure of the server's own is answered as an internal error.
func (s *server) handle(ctx context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (result any, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("the language server failed", "method", req.Method, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			result, err = nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: fmt.Sprintf("internal error: %v", r)}
		}
	}()
	return s.dispatch(ctx, req.Method, req.Params)
}

func (s *server) dispatch(ctx context.Context, method string, params *json.RawMessage) (any, error) {
	switch method {
	case "initialize":
		return s.initialize(), nil
	case "initialized", "$/cancelRequest", "$/setTrace", "workspace/didChangeConfiguration", "textDocument/didSave":
		return nil, nil
	case "shutdown":
		s.mu.Lock()
		s.shutdown = true
		s.mu.Unlock()
		s.stop()
		return nil, nil
	case "exit":
		select {
		case <-s.exited:
		default:
			close(s.exited)
		}
		return nil, nil
	case "textDocument/didOpen":
		var p didOpenParams
		if err := decode(params, &p); err != nil {
			return nil, invalid(err)
		}
		s.open(p)
		return nil, nil
	case "textDocument/didChange":
		var p didChangeParams
		if err := decode(params, &p); err != nil {
			return nil, invalid(err)
		}
		s.change(p)
		return nil, nil
	case "textDocument/didClose":
		var p didCloseParams
		if err := decode(params, &p); err != nil {
			return nil, invalid(err)
		}
		s.close(ctx, p.TextDocument.URI)
		return nil, nil
	}
	var p referenceParams
	var np renameParams
	if err := decode(params, &p); err != nil {
		return nil, invalid(err)
	}
	if method == "textDocument/rename" {
		if err := decode(params, &np); err != nil {
			return nil, invalid(err)
		}
	}
	var cp codeActionParams
	if method == "textDocument/codeAction" {
		if err := decode(params, &cp); err != nil {
			return nil, invalid(err)
		}
	}
	handlers := map[string]func(*document, *analysis) (any, error){
		"textDocument/hover":      func(d *document, a *analysis) (any, error) { return s.hover(a, p.Position), nil },
		"textDocument/completion": func(d *document, a *analysis) (any, error) { return s.complete(d, a, p.Position), nil },
		"textDocument/definition": func(d *document, a *analysis) (any, error) { return s.definition(d, a, p.Position), nil },
		"textDocument/references": func(d *document, a *analysis) (any, error) {
			return s.references(d, a, p.Position, p.Context.IncludeDeclaration), nil
		},
		"textDocument/rename":         func(d *document, a *analysis) (any, error) { return s.rename(d, a, np.Position, np.NewName) },
		"textDocument/formatting":     func(d *document, a *analysis) (any, error) { return s.format(a), nil },
		"textDocument/documentSymbol": func(d *document, a *analysis) (any, error) { return s.symbols(a), nil },
		"textDocument/codeAction":     func(d *document, a *analysis) (any, error) { return s.codeActions(d, a, cp.Range), nil },
	}
	h, ok := handlers[method]
	if !ok {
		if strings.HasPrefix(method, "$/") {
			return nil, nil
		}
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "method not supported: " + method}
	}
	d := s.doc(p.TextDocument.URI)
	if d == nil {
		return nil, errNoDocument
	}
	return h(d, d.current(s.opts.Config).indexed())
}

func invalid(err error) error {
	return &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: err.Error()}
}

func (s *server) initialize() initializeResult {
	var r initializeResult
	r.ServerInfo.Name = "obelisk"
	r.ServerInfo.Version = s.opts.Version
	r.Capabilities = serverCapabilities{
		PositionEncoding:   "utf-16",
		TextDocumentSync:   map[string]any{"openClose": true, "change": 2, "save": false},
		HoverProvider:      true,
		CompletionProvider: map[string]any{"triggerCharacters": []string{".", "†", "$", "(", ","}},
		DefinitionProvider: true,
		ReferencesProvider: true,
		RenameProvider:     true,
		FormattingProvider: true,
		SymbolProvider:     true,
		CodeActionProvider: map[string]any{"codeActionKinds": []string{"quickfix"}},
	}
	return r
}

func (s *server) doc(uri string) *document {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.docs[uri]
}

// uriPath returns the file path of a file: URI, or "" for another
// scheme (an unsaved buffer).
func uriPath(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return ""
	}
	return filepath.FromSlash(u.Path)
}

// fileURI returns the file: URI of a path.
func fileURI(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

func (s *server) open(p didOpenParams) {
	d := &document{uri: p.TextDocument.URI, version: p.TextDocument.Version, text: newText(p.TextDocument.Text)}
	d.path = uriPath(d.uri)
	if d.path != "" {
		d.dir = filepath.Dir(d.path)
	}
	s.mu.Lock()
	if old := s.docs[d.uri]; old != nil {
		old.mu.Lock()
		if old.timer != nil {
			old.timer.Stop()
		}
		old.mu.Unlock()
	}
	s.docs[d.uri] = d
	s.mu.Unlock()
	s.schedule(d, 0)
}

func (s *server) change(p didChangeParams) {
	d := s.doc(p.TextDocument.URI)
	if d == nil {
		return
	}
	d.mu.Lock()
	for _, c := range p.ContentChanges {
		d.text = d.text.apply(c)
	}
	d.version = p.TextDocument.Version
	d.mu.Unlock()
	s.schedule(d, s.opts.Debounce)
}

func (s *server) close(ctx context.Context, uri string) {
	s.mu.Lock()
	d := s.docs[uri]
	delete(s.docs, uri)
	s.mu.Unlock()
	if d == nil {
		return
	}
	d.mu.Lock()
	if d.timer != nil {
		d.timer.Stop()
	}
	d.mu.Unlock()
	s.send(ctx, publishDiagnosticsParams{URI: uri, Diagnostics: []diagnostic{}})
}

// schedule checks the document after a delay, the latest edit's: an
// edit before it runs starts the wait again.
func (s *server) schedule(d *document, after time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop()
	}
	d.timer = time.AfterFunc(after, func() { s.diagnose(d) })
}

// diagnose checks the document's current text and publishes its
// diagnostics, unless an edit came while it checked.
func (s *server) diagnose(d *document) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("checking a document failed", "uri", d.uri, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	a := d.current(s.opts.Config)
	d.mu.Lock()
	stale := a.version != d.version
	d.mu.Unlock()
	if stale || s.doc(d.uri) != d {
		return
	}
	v := a.version
	s.send(context.Background(), publishDiagnosticsParams{URI: d.uri, Version: &v, Diagnostics: s.diagnostics(d, a)})
}

func (s *server) send(ctx context.Context, p publishDiagnosticsParams) {
	s.mu.Lock()
	conn, hook, done := s.conn, s.publish, s.shutdown
	s.mu.Unlock()
	if hook != nil {
		hook(p)
		return
	}
	if conn == nil || done {
		return
	}
	if err := conn.Notify(ctx, "textDocument/publishDiagnostics", p); err != nil {
		s.log.Debug("publishing diagnostics", "error", err)
	}
}

// current returns the analysis of the document's current text, making
// it when the latest is of an older version.
func (d *document) current(cfg compiler.Config) *analysis {
	d.mu.Lock()
	version, t, last := d.version, d.text, d.last
	d.mu.Unlock()
	if last != nil && last.version == version && last.text == t {
		return last
	}
	name := d.path
	if name == "" {
		name = d.uri
	}
	a := analyze(name, d.dir, version, t, cfg)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.text == t {
		d.last = a
		if a.info() != nil {
			d.good = a
		}
	}
	return a
}

// goodInfo returns the latest checked plan of the document, of this
// version or an earlier one, or nil.
func (d *document) goodInfo() *compiler.Info {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.good == nil {
		return nil
	}
	return d.good.info()
}
