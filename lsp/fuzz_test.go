package lsp

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// FuzzHandler opens a document and applies random edits, ranges and
// positions to it through the protocol's handler, with every request
// after each edit. The handler must not panic (dispatch is called
// without the recovery handle adds) and must keep the text in step.
func FuzzHandler(f *testing.F) {
	f.Add(weatherPlan, []byte{0, 3, 5, 1, 2, 9, 4, 0, 7})
	f.Add(weatherPlan, []byte{1, 9, 200, 2, 255, 0, 3, 4, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add("plan p(x: int) -> int {\n  a: echo(value: †input.x) -> †state.y\n  output †state.y\n}\nb: p(x: 1) -> †state.z\n", []byte{2, 1, 8, 3, 1, 14, 4, 4, 30, 9, 0, 0})
	f.Add(`[{"_tool": "echo", "value": "†state.w", "_outputPath": "†state.w2"}]`, []byte{0, 0, 20, 5, 0, 33})
	f.Add("", []byte{0, 0, 0, 1, 0, 0})
	f.Add("x: f(a: \"😀†\") -> †state.", []byte{0, 0, 12, 6, 0, 11, 5, 0, 25})
	inserts := []string{"", "†", "😀", "\n", "†state.", "(", ")", "{", "}", "a: ", ",", "\"", "tool t(x: int) -> int pure\n", "for each x in †input.xs: ", "  when †state.", "$input."}
	methods := []string{"textDocument/hover", "textDocument/completion", "textDocument/definition", "textDocument/references", "textDocument/rename", "textDocument/formatting", "textDocument/documentSymbol", "textDocument/codeAction"}
	f.Fuzz(func(t *testing.T, plan string, ops []byte) {
		s := newServer(Options{Debounce: time.Hour})
		s.publish = func(publishDiagnosticsParams) {}
		defer s.stop()
		ctx := context.Background()
		uri := "file:///tmp/obelisk-fuzz/p.plan"
		if len(ops) > 0 && ops[0]%2 == 1 {
			uri = "file:///tmp/obelisk-fuzz/p.json"
		}
		call := func(method string, params any) {
			b, err := json.Marshal(params)
			if err != nil {
				t.Fatal(err)
			}
			raw := json.RawMessage(b)
			s.dispatch(ctx, method, &raw)
		}
		call("textDocument/didOpen", didOpenParams{TextDocument: textDocumentItem{URI: uri, Version: 1, Text: plan}})
		// JSON carries invalid UTF-8 as U+FFFD.
		want := s.doc(uri).text.s
		version := 1
		pos := func(i int) position {
			// Lines and characters near the text, and now and then
			// far outside it.
			l, c := int(ops[i%len(ops)]), int(ops[(i+1)%len(ops)])
			if l > 200 {
				l = -l
			}
			return position{Line: l % 40, Character: c - 8}
		}
		for i := 0; i+2 < len(ops) && i < 60; i += 3 {
			d := s.doc(uri)
			r := rng{Start: pos(i), End: pos(i + 1)}
			ins := inserts[int(ops[i+2])%len(inserts)]
			a, b := d.text.offsets(r)
			want = want[:a] + ins + want[b:]
			version++
			call("textDocument/didChange", didChangeParams{TextDocument: versionedTextDocumentIdentifier{URI: uri, Version: version}, ContentChanges: []contentChange{{Range: &r, Text: ins}}})
			if got := s.doc(uri).text.s; got != want {
				t.Fatalf("after an edit the text is %q, want %q", got, want)
			}
			p := pos(i + 2)
			method := methods[int(ops[i])%len(methods)]
			call(method, renameParams{positionParams: positionParams{TextDocument: textDocumentIdentifier{URI: uri}, Position: p}, NewName: "renamed"})
			call("textDocument/codeAction", codeActionParams{TextDocument: textDocumentIdentifier{URI: uri}, Range: r})
			d = s.doc(uri)
			_ = s.diagnostics(d, d.current(s.opts.Config))
		}
		for _, m := range methods {
			call(m, positionParams{TextDocument: textDocumentIdentifier{URI: uri}, Position: position{Line: 1 << 30, Character: -1 << 30}})
		}
		call("textDocument/didClose", didCloseParams{TextDocument: textDocumentIdentifier{URI: uri}})
		call("textDocument/hover", positionParams{TextDocument: textDocumentIdentifier{URI: uri}})
	})
}
