package mcp

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestResultNumbers: the SDK decodes a structured result's numbers into
// float64s, which round an integer beyond 2^53. A result whose text
// content is the same JSON keeps every digit, from the text; one without
// keeps an integer the float64 holds exactly as an int64, and a larger
// one as a float64, which a place typed int refuses rather than take a
// rounded integer.
func TestResultNumbers(t *testing.T) {
	const big = `{"id": 12345678901234567, "n": 3, "x": 2.5, "list": [1, 9007199254740993]}`
	ctx := context.Background()
	srv := sdk.NewServer(&sdk.Implementation{Name: "num", Version: "v0.0.1"}, nil)
	for name, text := range map[string]string{"mirrored": big, "bare": "", "other": `{"id": 1}`} {
		srv.AddTool(&sdk.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				res := &sdk.CallToolResult{StructuredContent: json.RawMessage(big)}
				if text != "" {
					res.Content = []sdk.Content{&sdk.TextContent{Text: text}}
				}
				return res, nil
			})
	}
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	s, err := Connect(ctx, "num", ct, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	exact := map[string]any{"id": int64(12345678901234567), "n": int64(3), "x": 2.5, "list": []any{int64(1), int64(9007199254740993)}}
	rounded := map[string]any{"id": 12345678901234568.0, "n": int64(3), "x": 2.5, "list": []any{int64(1), 9007199254740992.0}}
	for name, want := range map[string]any{"mirrored": exact, "bare": rounded, "other": rounded} {
		got, err := s.Call(ctx, name, map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}
