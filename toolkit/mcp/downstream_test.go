package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// serve connects to a server built by the test over the in-memory
// transport.
func serve(t *testing.T, name string, srv *sdk.Server, opts Options) *Server {
	t.Helper()
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	s, err := Connect(ctx, name, ct, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestSchemaOrder: a tool's schemas keep the order the server gives their
// properties in (the SDK's maps sort them), so that a plan's signature
// lists the parameters in the server's order, as a tools file with the
// same JSON does.
func TestSchemaOrder(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "fs", Version: "v0.0.1"}, nil)
	const in = `{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"},"append":{"type":"boolean"}},"required":["path","content"]}`
	const out = `{"type":"object","properties":{"written":{"type":"integer"},"at":{"type":"string"}}}`
	srv.AddTool(&sdk.Tool{Name: "write", InputSchema: json.RawMessage(in), OutputSchema: json.RawMessage(out)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{StructuredContent: map[string]any{"written": 1, "at": "now"}}, nil
		})
	s := serve(t, "test", srv, Options{})
	d := s.Tools()[0]
	if string(d.InputSchema) != in || string(d.OutputSchema) != out {
		t.Errorf("schemas of write:\n got %s\n     %s\nwant %s\n     %s", d.InputSchema, d.OutputSchema, in, out)
	}
}

// TestContentKept: a result with an image or a resource link beside its
// text is its whole content list, nothing dropped; a result with text
// only is still its text, read as JSON.
func TestContentKept(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "media", Version: "v0.0.1"}, nil)
	results := map[string][]sdk.Content{
		"image": {&sdk.TextContent{Text: "Here is the chart:"}, &sdk.ImageContent{Data: []byte("PNG"), MIMEType: "image/png"}},
		"links": {&sdk.TextContent{Text: "2 files"}, &sdk.ResourceLink{URI: "file:///a.txt", Name: "a.txt", MIMEType: "text/plain"}},
		"texts": {&sdk.TextContent{Text: `{"n":`}, &sdk.TextContent{Text: `1}`}},
	}
	for name, content := range results {
		srv.AddTool(&sdk.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: content}, nil
			})
	}
	s := serve(t, "test", srv, Options{})
	for name, want := range map[string]any{
		"image": []any{
			map[string]any{"type": "text", "text": "Here is the chart:"},
			map[string]any{"type": "image", "data": "UE5H", "mimeType": "image/png"},
		},
		"links": []any{
			map[string]any{"type": "text", "text": "2 files"},
			map[string]any{"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt", "mimeType": "text/plain"},
		},
		"texts": map[string]any{"n": int64(1)},
	} {
		got, err := s.Call(context.Background(), name, map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

// TestMaxParallel: with MaxParallel 2, a third call, a read, waits for
// its turn without reaching the server, and gives up when its context
// ends.
func TestMaxParallel(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "search", Version: "v0.0.1"}, nil)
	var inside, most atomic.Int32
	entered := make(chan struct{}, 3)
	release := make(chan struct{})
	srv.AddTool(&sdk.Tool{Name: "find", InputSchema: map[string]any{"type": "object"}, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			n := inside.Add(1)
			defer inside.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			entered <- struct{}{}
			<-release
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
		})
	s := serve(t, "test", srv, Options{MaxParallel: 2})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if _, err := s.Call(context.Background(), "find", map[string]any{}); err != nil {
				t.Error(err)
			}
		})
	}
	<-entered
	<-entered
	ctx, cancel := context.WithCancel(context.Background())
	third := make(chan error)
	go func() {
		_, err := s.Call(ctx, "find", map[string]any{})
		third <- err
	}()
	cancel()
	if err := <-third; !errors.Is(err, context.Canceled) {
		t.Errorf("the third call: %v, want context.Canceled", err)
	}
	close(release)
	wg.Wait()
	if got := most.Load(); got != 2 {
		t.Errorf("%d calls were in the server at once, want 2", got)
	}
	if len(entered) != 0 {
		t.Errorf("the third call reached the server")
	}
	// Once the slots are free again, calls go through.
	if _, err := s.Call(context.Background(), "find", map[string]any{}); err != nil {
		t.Fatal(err)
	}
}

// heldServer is a server whose tools each hold their call until the test
// releases it, counting the calls in progress: read (readOnlyHint),
// write (no annotations) and note (a write that says it only adds:
// destructiveHint false, idempotentHint).
type heldServer struct {
	entered chan string // the tool of each call that reaches the server
	release chan struct{}
	free    func() // closes release, once

	mu           sync.Mutex
	reads, write int // in progress
	mostReads    int
	mostWrites   int
}

func newHeldServer(t *testing.T, opts Options) (*Server, *heldServer) {
	h := &heldServer{entered: make(chan string, 16), release: make(chan struct{})}
	h.free = sync.OnceFunc(func() { close(h.release) })
	srv := sdk.NewServer(&sdk.Implementation{Name: "held", Version: "v0.0.1"}, nil)
	no := false
	for name, a := range map[string]*sdk.ToolAnnotations{
		"read":  {ReadOnlyHint: true},
		"write": nil,
		"note":  {DestructiveHint: &no, IdempotentHint: true},
	} {
		srv.AddTool(&sdk.Tool{Name: name, InputSchema: map[string]any{"type": "object"}, Annotations: a},
			func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				h.enter(name == "read", +1)
				defer h.enter(name == "read", -1)
				h.entered <- name
				select {
				case <-h.release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
			})
	}
	s := serve(t, "held", srv, opts)
	t.Cleanup(h.free) // before the server closes, should a test stop early
	return s, h
}

// enter counts a call in (+1) or out (-1).
func (h *heldServer) enter(read bool, d int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if read {
		h.reads += d
		h.mostReads = max(h.mostReads, h.reads)
	} else {
		h.write += d
		h.mostWrites = max(h.mostWrites, h.write)
	}
}

// inProgress returns the reads and the writes in progress.
func (h *heldServer) inProgress() (reads, writes int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reads, h.write
}

// most returns the most reads and the most writes that were in progress
// at once.
func (h *heldServer) most() (reads, writes int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mostReads, h.mostWrites
}

// calls calls each tool named, all at once, and returns the errors.
func calls(s *Server, tools ...string) <-chan error {
	errs := make(chan error, len(tools))
	for _, tool := range tools {
		go func() {
			_, err := s.Call(context.Background(), tool, map[string]any{})
			errs <- err
		}()
	}
	return errs
}

// TestWritesOneAtATime: by default, a call of a tool that is not read-only
// (no annotations, or only destructiveHint false) waits for the server's
// other writes, while read-only calls go at once, beside a write too; a
// write that waits gives up when its context ends.
func TestWritesOneAtATime(t *testing.T) {
	s, h := newHeldServer(t, Options{})
	errs := calls(s, "write", "note", "write", "note", "read", "read", "read")
	var writes []string
	for range 4 { // the three reads and one write
		if tool := <-h.entered; tool != "read" {
			writes = append(writes, tool)
		}
	}
	if reads, w := h.inProgress(); reads != 3 || w != 1 {
		t.Fatalf("%d reads and %d writes in progress, want 3 reads beside 1 write", reads, w)
	}

	ctx, cancel := context.WithCancel(context.Background())
	waiting := make(chan error)
	go func() {
		_, err := s.Call(ctx, "write", map[string]any{})
		waiting <- err
	}()
	cancel()
	if err := <-waiting; !errors.Is(err, context.Canceled) {
		t.Errorf("the write canceled while it waited: %v, want context.Canceled", err)
	}

	h.free()
	for range 7 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for len(h.entered) > 0 {
		writes = append(writes, <-h.entered)
	}
	if reads, w := h.most(); len(writes) != 4 || w != 1 || reads != 3 {
		t.Errorf("writes %v reached the server, at most %d at once (want 1), and at most %d reads (want 3)", writes, w, reads)
	}
}

// TestMaxWrites: MaxWrites raises the bound of writes in progress at once;
// a negative MaxWrites lifts it.
func TestMaxWrites(t *testing.T) {
	for _, tc := range []struct{ maxWrites, want int }{{2, 2}, {-1, 4}} {
		s, h := newHeldServer(t, Options{MaxWrites: tc.maxWrites})
		errs := calls(s, "write", "write", "note", "note")
		for range tc.want {
			<-h.entered
		}
		if _, w := h.inProgress(); w != tc.want {
			t.Errorf("MaxWrites %d: %d writes in progress, want %d", tc.maxWrites, w, tc.want)
		}
		h.free()
		for range 4 {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		if _, w := h.most(); w != tc.want {
			t.Errorf("MaxWrites %d: at most %d writes at once, want %d", tc.maxWrites, w, tc.want)
		}
	}
}
