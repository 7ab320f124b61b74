package httptool

import (
	"encoding/json"
	"testing"

	"github.com/obelisk-plan/obelisk/toolkit"
)

// FuzzNew: no http block, however wrong, makes New panic, and a tool New
// accepts builds a URL and a body from any arguments without panicking.
func FuzzNew(f *testing.F) {
	for _, seed := range []string{
		`{"url": "${BASE}/v1/forecast/{city}?days={days}&tag={tags}&k=${KEY}#frag", "headers": {"A": "Bearer ${T}", "K": "{key}"}, "result": "/a/0"}`,
		`{"method": "POST", "url": "http://x/{city}", "body": ["note", "days"]}`,
		`{"method": "put", "url": "http://x/?{city}", "body": "tags"}`,
		`{"url": "{}"}`, `{"url": "${"}`, `{"url": "}{"}`, `{"url": "?&&="}`, `{"timeout": "1s", "url": "x"}`,
	} {
		f.Add([]byte(seed), `{"city": "a/b c", "days": 2, "tags": ["x", null, 3], "note": {"k": [1]}}`)
	}
	f.Fuzz(func(t *testing.T, block []byte, argsJSON string) {
		tool, err := New(toolkit.Definition{Name: "f", InputSchema: json.RawMessage(forecastSchema)}, block,
			Options{LookupEnv: env(map[string]string{"BASE": "http://127.0.0.1:1", "KEY": "k&=?", "T": "t"})})
		if err != nil {
			return
		}
		var args map[string]any
		if v, err := toolkit.DecodeJSON([]byte(argsJSON)); err == nil {
			args, _ = v.(map[string]any)
		}
		tool.url(args)
		tool.body(args)
		for _, h := range tool.headers {
			h.value.expand(args, tool.opts.LookupEnv, nil)
		}
		tool.selectResult(args, "")
	})
}
