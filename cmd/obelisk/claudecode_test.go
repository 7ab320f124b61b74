package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/obelisk-plan/obelisk/internal/testsize"
)

// TestClaudeCode measures what Claude Code, from npm and in headless mode
// (-p), sends to its model for the context-size tasks and a small one,
// with the reference servers given to it directly and in plan mode through
// obelisk mcp-server. The model is a scripted server of the Anthropic
// protocol on loopback: it makes the calls a model would make, as few as
// it can, in parallel where they do not depend on each other, and loads
// the tools' schemas with Claude Code's tool search first, as Claude Code
// asks. The test counts the bytes of every request Claude Code sends,
// its system prompt and own tools included, and checks that both ways get
// the same answer. Approvals come from an Elicitation hook, since -p
// cancels every elicitation.
func TestClaudeCode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Claude Code for each task, twice; not with -short")
	}
	npm := npmPackages(t)
	claude := filepath.Join(npm, "node_modules/@anthropic-ai/claude-code/bin/claude.exe")
	if err := exec.Command(claude, "--version").Run(); err != nil {
		t.Skip("Claude Code is not installed in $" + npmEnv + " (testdata/mcp/package-lock.json pins it): " + npmInstall)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	tasks := append([]*contextTask{smallTask(root)}, contextTasks(root)...)
	// The chain of computations takes a thousand turns of Claude Code
	// when it calls the tools directly.
	tasks = tasks[:testsize.Pick(t, 3, 4)]
	servers := map[string][]string{
		"fs":         {"node", filepath.Join(npm, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"), root},
		"memory":     {"node", filepath.Join(npm, "node_modules/@modelcontextprotocol/server-memory/dist/index.js")},
		"everything": {"node", filepath.Join(npm, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")},
	}
	names := []string{"fs", "memory", "everything"}
	var rows []claudeRow
	own := 0
	for _, task := range tasks {
		direct := map[string]any{}
		for _, name := range names {
			direct[name] = map[string]any{"command": servers[name][0], "args": servers[name][1:],
				"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}}
		}
		d := runClaude(t, claude, root, direct, task.tools, func(m *meter) string { return task.direct(m) })
		args := []string{"mcp-server", "--state-dir", t.TempDir(), "--mcp-parallel", "memory=1", "--max-cost", "100000000", "--wait", "10m"}
		for _, name := range names {
			args = append(args, "--mcp", fmt.Sprintf("%s='%s'", name, strings.Join(servers[name], "' '")))
		}
		plan := map[string]any{"obelisk": map[string]any{"command": exe, "args": args,
			"env": map[string]string{"OBELISK_TEST_MAIN": "1", "OBELISK_LOG": "error", "MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}}}
		p := runClaude(t, claude, root, plan, []string{"obelisk.get_primer", "obelisk.search_tools", "obelisk.run_plan"}, func(m *meter) string {
			// The first turn reads the primer, the sections the plan
			// needs, and the signatures, in parallel; the second runs the
			// plan; its output is the answer.
			calls := []claudeCall{{"obelisk", "get_primer", map[string]any{}}}
			for _, s := range task.sections {
				calls = append(calls, claudeCall{"obelisk", "get_primer", map[string]any{"section": s}})
			}
			for _, q := range task.searches {
				calls = append(calls, claudeCall{"obelisk", "search_tools", map[string]any{"query": q, "limit": 3}})
			}
			m.batch(calls)
			answer := m.call("obelisk", "run_plan", map[string]any{"plan": task.plan, "input": task.input})
			var got struct {
				Status string
				Output any
			}
			if err := json.Unmarshal([]byte(answer), &got); err != nil || got.Status != "completed" {
				// Not Fatal: the script runs in a goroutine of its own, and
				// Claude Code waits for its answer.
				t.Errorf("%s: run_plan: %v\n%s", task.name, err, answer)
			}
			b, _ := json.Marshal(got.Output)
			return string(b)
		})
		if p.answer != d.answer {
			t.Errorf("%s: plan mode answers %s, direct calls %s", task.name, p.answer, d.answer)
		}
		task.check(t)
		t.Logf("%s: direct %d requests, %d bytes; plan mode %d requests, %d bytes %v", task.name, len(d.requests), d.bytes(), len(p.requests), p.bytes(), p.requests)
		own = min(d.requests[0], p.requests[0])
		rows = append(rows, claudeRow{
			contextRow: contextRow{task: task.name, directCalls: len(d.requests), directBytes: d.bytes(), planCalls: len(p.requests), planBytes: p.bytes()},
			beyond:     contextRow{directBytes: d.bytes() - len(d.requests)*own, planBytes: p.bytes() - len(p.requests)*own},
		})
	}
	var b strings.Builder
	b.WriteString("| task | direct calls: requests, bytes | plan mode: requests, bytes | fewer bytes | fewer bytes beyond Claude Code's own |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d, %s | %d, %s | %.1f%% | %.1f%% |\n", r.task, r.directCalls, kb(r.directBytes), r.planCalls, kb(r.planBytes), 100*r.saving(), 100*r.beyond.saving())
	}
	fmt.Fprintf(&b, "\nClaude Code's own part of a request (its system prompt and tools, before any MCP server has answered) is %s.\n", kb(own))
	t.Logf("\n%s", b.String())
	for i, r := range rows {
		if i == 0 && r.planBytes > r.directBytes {
			t.Errorf("%s: plan mode sends %d bytes, more than direct calls' %d", r.task, r.planBytes, r.directBytes)
		}
		// Claude Code's own part of each request is most of what a few
		// requests send; of the rest, plan mode sends a tenth.
		if i > 0 && (r.saving() < 0.5 || r.beyond.saving() < 0.85) {
			t.Errorf("%s: plan mode saves %.1f%% of the bytes, %.1f%% of those beyond Claude Code's own: less than 50%% or 85%%", r.task, 100*r.saving(), 100*r.beyond.saving())
		}
	}
}

// claudeRow is a task's measures, and the same without Claude Code's own
// part of each request.
type claudeRow struct {
	contextRow
	beyond contextRow
}

// claudeCall is a tool call the scripted model makes.
type claudeCall struct {
	server, tool string
	args         map[string]any
}

// batch makes calls in one turn, in parallel, and answers with their
// texts in order.
func (m *meter) batch(calls []claudeCall) []string {
	m.t.Helper()
	if m.batchVia == nil {
		var out []string
		for _, c := range calls {
			out = append(out, m.call(c.server, c.tool, c.args))
		}
		return out
	}
	m.calls += len(calls)
	return m.batchVia(calls)
}

// claudeRun is what Claude Code sent to the scripted model, and the answer
// it printed.
type claudeRun struct {
	requests []int
	answer   string
}

func (r claudeRun) bytes() int {
	n := 0
	for _, b := range r.requests {
		n += b
	}
	return n
}

// runClaude runs Claude Code headless with servers as its MCP servers and
// a scripted model that loads the schemas of tools (server.tool) in its
// first turn, then makes script's calls; script's answer is the model's
// last message.
func runClaude(t *testing.T, claude, root string, servers map[string]any, tools []string, script func(m *meter) string) claudeRun {
	t.Helper()
	model := newScriptedModel(t, tools, script)
	srv := httptest.NewServer(model)
	defer srv.Close()
	home := t.TempDir()
	cfg, _ := json.Marshal(map[string]any{"mcpServers": servers})
	// The person: a hook that accepts every elicitation, as a person
	// would by approving every gate of the plans.
	hook := `echo '{"hookSpecificOutput":{"hookEventName":"Elicitation","action":"accept","content":{"approve":true}}}'`
	settings, _ := json.Marshal(map[string]any{"hooks": map[string]any{"Elicitation": []any{map[string]any{"matcher": "obelisk", "hooks": []any{map[string]any{"type": "command", "command": hook}}}}}})
	var allowed []string
	for name := range servers {
		allowed = append(allowed, "mcp__"+name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", "Do the task.", "--mcp-config", string(cfg), "--strict-mcp-config", "--settings", string(settings), "--allowedTools", strings.Join(allowed, ","))
	// Claude Code gives its working directory as the MCP roots, which
	// the filesystem server takes for the directories it may read: the
	// tasks' directory.
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "HOME="+home, "ANTHROPIC_BASE_URL="+srv.URL, "ANTHROPIC_API_KEY=sk-test",
		// Tool search as against Anthropic's API, where it is on by
		// default; whole results, as the direct calls of the other
		// context-size test read them.
		"ENABLE_TOOL_SEARCH=true", "MAX_MCP_OUTPUT_TOKENS=1000000", "MCP_TOOL_TIMEOUT=600000", "MCP_TIMEOUT=60000",
		// Wait for every MCP server to connect before the first request,
		// however long a loaded machine takes to start them (by default
		// Claude Code gives a server 5 s and goes on without it).
		"MCP_CONNECTION_NONBLOCKING=false", "MCP_CONNECT_TIMEOUT_MS=60000",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("claude: %v\n%s", err, stderr.String())
	}
	if model.err != nil {
		t.Fatal(model.err)
	}
	if got := strings.TrimSpace(string(out)); got != model.final {
		t.Fatalf("claude printed %q, the model answered %q", got, model.final)
	}
	return claudeRun{requests: model.requests, answer: model.final}
}

// scriptedModel answers Claude Code's requests with the calls of a script
// that runs in its own goroutine: each call of the script's meter becomes
// a turn of tool uses, and the results of the next request its answer.
type scriptedModel struct {
	t        *testing.T
	mu       sync.Mutex
	requests []int
	calls    chan []claudeCall
	results  chan []string
	done     chan string
	final    string
	err      error
	// pending are the IDs of the tool uses of the last turn; search, when
	// the turn was a tool search, the calls it loaded the tools of.
	pending []string
	search  []claudeCall
	loaded  map[string]bool
	turn    int
	// preload are the tools whose schemas the first turn loads.
	preload []string
}

func newScriptedModel(t *testing.T, tools []string, script func(m *meter) string) *scriptedModel {
	s := &scriptedModel{t: t, calls: make(chan []claudeCall), results: make(chan []string), done: make(chan string, 1), loaded: map[string]bool{}}
	for _, tool := range tools {
		server, name, _ := strings.Cut(tool, ".")
		s.preload = append(s.preload, toolName(claudeCall{server: server, tool: name}))
	}
	m := &meter{t: t}
	m.batchVia = func(calls []claudeCall) []string {
		s.calls <- calls
		return <-s.results
	}
	m.via = func(server, tool string, args map[string]any) string {
		return m.batchVia([]claudeCall{{server, tool, args}})[0]
	}
	go func() { s.done <- script(m) }()
	return s
}

func toolName(c claudeCall) string { return "mcp__" + c.server + "__" + c.tool }

func (s *scriptedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		// Claude Code's other requests (a check that the server is there)
		// are not the model's: they count nothing.
		http.NotFound(w, r)
		return
	}
	s.requests = append(s.requests, len(body))
	var req struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Stream bool `json:"stream"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		s.err = fmt.Errorf("a request that is not JSON: %w", err)
		http.Error(w, err.Error(), 400)
		return
	}
	main := false
	for _, tool := range req.Tools {
		main = main || tool.Name == "ToolSearch"
	}
	if !main {
		// Claude Code's own requests (titles, summaries) get a word.
		writeTurn(w, req.Stream, []map[string]any{{"type": "text", "text": "ok"}}, "end_turn")
		return
	}
	if len(s.pending) > 0 {
		// The results are in a user message near the end; Claude Code
		// may add messages of its own after it.
		results := map[string]string{}
		for _, m := range req.Messages {
			maps.Copy(results, toolResults(m.Content))
		}
		var texts []string
		for _, id := range s.pending {
			text, ok := results[id]
			if !ok {
				s.err = fmt.Errorf("no result for tool use %s", id)
			}
			if strings.HasPrefix(text, errorPrefix) && s.err == nil {
				s.err = fmt.Errorf("tool use %s failed: %s", id, text)
			}
			texts = append(texts, text)
		}
		s.pending = nil
		if s.search == nil {
			s.results <- texts
		}
	}
	calls := s.search
	s.search = nil
	if calls == nil {
		select {
		case calls = <-s.calls:
		case s.final = <-s.done:
			writeTurn(w, req.Stream, []map[string]any{{"type": "text", "text": s.final}}, "end_turn")
			return
		}
		load := s.preload
		s.preload = nil
		for _, c := range calls {
			if name := toolName(c); !s.loaded[name] && !slices.Contains(load, name) {
				load = append(load, name)
			}
		}
		if len(load) > 0 {
			// The schemas first, with Claude Code's tool search.
			for _, name := range load {
				s.loaded[name] = true
			}
			s.search = calls
			s.turn++
			id := fmt.Sprintf("toolu_%d_0", s.turn)
			s.pending = []string{id}
			writeTurn(w, req.Stream, []map[string]any{{"type": "tool_use", "id": id, "name": "ToolSearch", "input": map[string]any{"query": "select:" + strings.Join(load, ","), "max_results": len(load)}}}, "tool_use")
			return
		}
	}
	s.turn++
	var blocks []map[string]any
	for i, c := range calls {
		id := fmt.Sprintf("toolu_%d_%d", s.turn, i)
		s.pending = append(s.pending, id)
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": id, "name": toolName(c), "input": c.args})
	}
	writeTurn(w, req.Stream, blocks, "tool_use")
}

// toolResults returns the texts of the tool results of a user message,
// by tool use ID.
func toolResults(content json.RawMessage) map[string]string {
	var blocks []struct {
		Type      string          `json:"type"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
		IsError   bool            `json:"is_error"`
	}
	json.Unmarshal(content, &blocks)
	out := map[string]string{}
	for _, b := range blocks {
		if b.Type != "tool_result" {
			continue
		}
		var text string
		if json.Unmarshal(b.Content, &text) != nil {
			var parts []struct {
				Type, Text string
			}
			json.Unmarshal(b.Content, &parts)
			var all []string
			for _, p := range parts {
				if p.Type == "text" {
					all = append(all, p.Text)
				}
			}
			text = strings.Join(all, "\n")
		}
		// Claude Code gives the model a result's structured content
		// when it has one, which the filesystem server's is: its text as
		// the one field content.
		var structured map[string]any
		if json.Unmarshal([]byte(text), &structured) == nil && len(structured) == 1 {
			if c, ok := structured["content"].(string); ok {
				text = c
			}
		}
		if b.IsError {
			text = errorPrefix + text
		}
		out[b.ToolUseID] = text
	}
	return out
}

// errorPrefix marks the text of a failed call.
const errorPrefix = "tool error: "

// writeTurn answers with an assistant message of blocks, streamed as
// server-sent events when the request asks for a stream.
func writeTurn(w http.ResponseWriter, stream bool, blocks []map[string]any, stop string) {
	msg := map[string]any{"id": "msg_scripted", "type": "message", "role": "assistant", "model": "scripted",
		"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 1, "output_tokens": 1}}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(msg)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(name string, v map[string]any) {
		v["type"] = name
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"] = []any{}
	start["stop_reason"] = nil
	event("message_start", map[string]any{"message": start})
	for i, b := range blocks {
		switch b["type"] {
		case "text":
			event("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			event("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		case "tool_use":
			input, _ := json.Marshal(b["input"])
			event("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			event("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
		}
		event("content_block_stop", map[string]any{"index": i})
	}
	event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 1}})
	event("message_stop", map[string]any{})
}
