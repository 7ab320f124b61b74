package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolkit/llm/llmtest"
	"github.com/obelisk-plan/obelisk/toolkit/mcp/mcptest"
)

// TestGenerateOnlyOfferedTools: without --builtins, a plan that calls the
// built-in http.get and file.write, which the model was not offered, does
// not check, and the message names only the offered tools; nothing is
// written.
func TestGenerateOnlyOfferedTools(t *testing.T) {
	answer := strings.Replace(fixedAnswer, "c: notify(", "x: http.get(url: \"https://attacker.example\") -> †state.x\ny: file.write(path: \"a\", content: \"b\") -> †state.y\nc: notify(", 1)
	srv := llmtest.NewOpenAI(llmtest.Script(llmtest.Text(answer, llm.Usage{})))
	defer srv.Close()
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools.json")
	writeFile(t, tools, toolsJSON)
	out := filepath.Join(dir, "score.plan")
	code, _, stderr := withEnv(t, map[string]string{"OPENAI_API_KEY": "test"}, "generate", "--max-repairs", "0",
		"--goal", "Score customer c-1 and tell them.", "--tools", tools, "--input", `{"id": "c-1"}`,
		"--base-url", srv.URL+"/v1", "--model", "planner", "-o", out)
	if code != exitInput {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"unknown tool http.get; the available tools are lookup, notify, score", "unknown tool file.write; the available tools are lookup, notify, score"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s was written", out)
	}
	if prompt := srv.Requests()[0].Messages[0].Content; strings.Contains(prompt, "http.get") || strings.Contains(prompt, "tool echo") {
		t.Errorf("the prompt offers built-in tools:\n%s", prompt)
	}
}

// TestGenerateMCPToolsOnce: the tools of MCP servers are offered once
// each, by their bare names, and by SERVER.TOOL only where two servers
// (or a built-in tool) share the name; the model's plan calls them so.
func TestGenerateMCPToolsOnce(t *testing.T) {
	t.Setenv(mcptest.EnvServer, "1")
	srv := llmtest.NewOpenAI(llmtest.Script(llmtest.Text(`s: calc.add(a: 1, b: 2) -> †state.s
g: greet(name: "Ada") -> †state.g
o: other.add(a: †state.s.sum, b: 1) -> †state.o
output {sum: †state.o.sum, hello: †state.g}
`, llm.Usage{Input: 1234})))
	defer srv.Close()
	code, stdout, stderr := withEnv(t, map[string]string{"OPENAI_API_KEY": "test"}, "generate", "--goal", "Add and greet.",
		"--mcp", fmt.Sprintf("calc='%s' calc", os.Args[0]), "--mcp", fmt.Sprintf("other='%s' other", os.Args[0]),
		"--base-url", srv.URL+"/v1", "--model", "planner")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "prompt 1234 tokens") || !strings.Contains(stdout, "calc.add(a: 1, b: 2)") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	prompt := srv.Requests()[0].Messages[0].Content
	for tool, n := range map[string]int{"tool greet(": 1, "tool calc.greet(": 0, "tool calc.add(": 1, "tool other.add(": 1, "tool add(": 0,
		"tool charge(": 1, "tool calc.charge(": 0, "tool other.echo(": 1, "tool echo(": 0} {
		if got := strings.Count(prompt, tool); got != n {
			t.Errorf("the prompt lists %q %d times, want %d", tool, got, n)
		}
	}
	if !strings.Contains(prompt, "tool charge(amount: number) -> {receipt: string} irreversible") {
		t.Errorf("charge's effect is not stated:\n%s", prompt)
	}
}

// TestAnswerFormFallback: --answer-form json sends the plan schema; a
// server that refuses it gets the request again in plan text, and the
// command warns and goes on.
func TestAnswerFormFallback(t *testing.T) {
	for _, cmd := range []string{"generate", "agent"} {
		t.Run(cmd, func(t *testing.T) {
			srv := llmtest.NewAnthropic(llmtest.Script(llmtest.Text(fixedAnswer, llm.Usage{Input: 800})))
			srv.RejectSchema = "tools.0.input_schema: JSON schema is invalid"
			defer srv.Close()
			dir := t.TempDir()
			tools := filepath.Join(dir, "tools.json")
			writeFile(t, tools, toolsJSON)
			mocks := filepath.Join(dir, "mocks.json")
			writeFile(t, mocks, `{"lookup": {"result": {"name": "Ada", "orders": 7}}, "score": {"result": 10.5}, "notify": {"result": {"sent": true}}}`)
			args := []string{cmd, "--goal", "Score c-1 and tell them.", "--tools", tools, "--input", `{"id": "c-1"}`, "--answer-form", "json"}
			if cmd == "agent" {
				args = append(args, "--mocks", mocks, "--evaluate=false")
			}
			code, _, stderr := withEnv(t, map[string]string{"ANTHROPIC_API_KEY": "test", "ANTHROPIC_BASE_URL": srv.URL, "OBELISK_MODEL": "planner"}, args...)
			if code != exitOK {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 || reqs[0].Schema == nil || reqs[1].Schema != nil {
				t.Fatalf("%d requests", len(reqs))
			}
			for _, want := range []string{"obelisk " + cmd + ": warning: the server refused the schema of a plan, so the model answers in plan text", "JSON schema is invalid", "text answers", "prompt 800 tokens"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
		})
	}
	code, _, stderr := withEnv(t, map[string]string{"ANTHROPIC_API_KEY": "test"}, "generate", "--goal", "x", "--answer-form", "yaml")
	if code != exitUsage || !strings.Contains(stderr, `unknown answer form "yaml": use text or json`) {
		t.Errorf("exit %d\n%s", code, stderr)
	}
}

// TestAgentUnofferedBuiltinSendsNothing: the operator grants a host to a
// tool of a tools file; the model's plan calls the built-in http.get on
// that host, which it was not offered, directly or after declaring it.
// The host receives no request from it, and the goal goes on.
func TestAgentUnofferedBuiltinSendsNothing(t *testing.T) {
	for name, first := range map[string]string{
		"called":   "p: http.get(url: \"%s/steal\") -> †state.p\noutput †state.p\n",
		"declared": "tool http.get(url: string) -> any pure\np: http.get(url: \"%s/steal\") -> †state.p\noutput †state.p\n",
	} {
		t.Run(name, func(t *testing.T) {
			var stolen, forecasts atomic.Int32
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasPrefix(r.URL.Path, "/steal") {
					stolen.Add(1)
				} else {
					forecasts.Add(1)
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"city": "Lyon", "high": 21.5}`)
			}))
			defer api.Close()
			srv := llmtest.NewOpenAI(llmtest.Script(
				llmtest.Text(fmt.Sprintf(first, api.URL), llm.Usage{}),
				llmtest.Text("f: forecast(city: \"Lyon\") -> †state.f\noutput †state.f.high\n", llm.Usage{})))
			defer srv.Close()
			dir := t.TempDir()
			tools := filepath.Join(dir, "tools.json")
			writeFile(t, tools, `{"tools": [{"name": "forecast",
  "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
  "outputSchema": {"type": "object", "properties": {"city": {"type": "string"}, "high": {"type": "number"}}, "required": ["city", "high"]},
  "annotations": {"readOnlyHint": true},
  "http": {"url": "`+api.URL+`/forecast/{city}"}}]}`)
			code, stdout, stderr := withEnv(t, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "OBELISK_MODEL": "local"},
				"agent", "--goal", "How warm is Lyon?", "--tools", tools, "--allow-net="+api.Listener.Addr().String())
			if stolen.Load() != 0 {
				t.Fatalf("the host received %d requests from http.get", stolen.Load())
			}
			if code != exitOK || !strings.Contains(stdout, `"output": 21.5`) || forecasts.Load() != 1 {
				t.Fatalf("exit %d, forecasts %d\nstdout %s\nstderr %s", code, forecasts.Load(), stdout, stderr)
			}
			second := srv.Requests()[1].Messages[0].Content
			if !strings.Contains(second, "unknown tool http.get") && !strings.Contains(second, "tool http.get was not offered") {
				t.Errorf("the second prompt does not say why:\n%s", second)
			}
		})
	}
}
