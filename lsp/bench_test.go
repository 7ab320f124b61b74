package lsp

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/obelisk-plan/obelisk/bench"
	"github.com/obelisk-plan/obelisk/compiler"
)

// BenchmarkEditToDiagnostics measures the time from an edit
// (textDocument/didChange) to the diagnostics of the edited text, the
// debounce (1 ms here) included: for an example plan and for a
// generated plan of 10,000 steps; and, side by side, planfile's check
// of the same text alone.
func BenchmarkEditToDiagnostics(b *testing.B) {
	refund, err := os.ReadFile("../examples/refund.plan")
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		text string
	}{
		{"refund", string(refund)},
		{"layered-10000", string(bench.Layered(100, 100, 5, 1).Text())},
	} {
		// The baseline: planfile's check of the same text, as obelisk
		// check does it, without the server.
		b.Run(c.name+"/planfile", func(b *testing.B) {
			t := newText(c.text)
			for range b.N {
				if a := analyze("p.plan", "", 1, t, compiler.Config{}); a.c.Diagnostics.HasErrors() {
					b.Fatal(a.c.Diagnostics)
				}
			}
		})
		b.Run(c.name+"/lsp", func(b *testing.B) {
			published := make(chan int, 1)
			s := newServer(Options{Debounce: time.Millisecond})
			s.publish = func(p publishDiagnosticsParams) {
				if len(p.Diagnostics) != 0 {
					b.Errorf("diagnostics: %+v", p.Diagnostics[0])
				}
				published <- *p.Version
			}
			defer s.stop()
			uri := "file:///tmp/obelisk-bench/p.plan"
			call := func(method string, params any) {
				raw, _ := json.Marshal(params)
				m := json.RawMessage(raw)
				if _, err := s.dispatch(context.Background(), method, &m); err != nil {
					b.Fatal(err)
				}
			}
			call("textDocument/didOpen", didOpenParams{TextDocument: textDocumentItem{URI: uri, Version: 1, Text: c.text}})
			<-published
			// Each edit appends a comment line to the end, and the next
			// takes it away.
			end := newText(c.text).position(len(c.text))
			b.ResetTimer()
			for i := range b.N {
				ch := contentChange{Range: &rng{Start: end, End: end}, Text: "# an edit\n"}
				if i%2 == 1 {
					ch = contentChange{Range: &rng{Start: end, End: position{Line: end.Line + 1}}}
				}
				call("textDocument/didChange", didChangeParams{TextDocument: versionedTextDocumentIdentifier{URI: uri, Version: i + 2}, ContentChanges: []contentChange{ch}})
				for v := <-published; v != i+2; v = <-published {
				}
			}
			b.StopTimer()
			if strings.Count(s.doc(uri).text.s, "# an edit") > 1 {
				b.Error("the edits did not apply")
			}
		})
	}
}
