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

// TestMaxParallel: with MaxParallel 2, a third call waits for its turn
// without reaching the server, and gives up when its context ends.
func TestMaxParallel(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "memory", Version: "v0.0.1"}, nil)
	var inside, most atomic.Int32
	entered := make(chan struct{}, 3)
	release := make(chan struct{})
	srv.AddTool(&sdk.Tool{Name: "write", InputSchema: map[string]any{"type": "object"}},
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
			if _, err := s.Call(context.Background(), "write", map[string]any{}); err != nil {
				t.Error(err)
			}
		})
	}
	<-entered
	<-entered
	ctx, cancel := context.WithCancel(context.Background())
	third := make(chan error)
	go func() {
		_, err := s.Call(ctx, "write", map[string]any{})
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
	if _, err := s.Call(context.Background(), "write", map[string]any{}); err != nil {
		t.Fatal(err)
	}
}
