package main

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// hits is a loopback server that counts the requests it gets and answers
// each with the path and the headers it got, echoed back as a JSON
// object, with the status the path names (/status/401) or 200.
type hits struct {
	*httptest.Server
	mu sync.Mutex
	n  int
}

func newHits(t *testing.T) *hits {
	t.Helper()
	h := &hits{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.n++
		h.mu.Unlock()
		status := http.StatusOK
		if s, ok := strings.CutPrefix(r.URL.Path, "/status/"); ok {
			fmt.Sscan(s, &status)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"path": %q, "auth": %q, "key": %q, "value": "v"}`, r.URL.String(), r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hits) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

func (h *hits) host() string { return h.Listener.Addr().String() }

// TestGrantFlags: a bad entry, an empty entry or list, a list a flag
// needs and does not get, is a usage error (exit 2) that says what is
// wrong, on every command that takes the flags.
func TestGrantFlags(t *testing.T) {
	dir := writeFiles(t, map[string]string{"p.plan": "echo(value: 1) -> †state.x\noutput †state.x\n"})
	plan := filepath.Join(dir, "p.plan")
	for _, tc := range []struct {
		flag, want string
	}{
		{"--allow-net=10.0.0.0/33", `for -allow-net: "10.0.0.0/33" is not a CIDR block such as 10.0.0.0/8 or fd00::/8`},
		{"--deny-net=fd00::/129", `"fd00::/129" is not a CIDR block`},
		{"--allow-net=", "an empty list"},
		{"--allow-net=a.example,,b.example", `an empty entry in "a.example,,b.example"`},
		{"--allow-net=a.example,", "an empty entry"},
		{"--allow-net=http://a.example", `"http://a.example" is not a host`},
		{"--allow-net=a.example:99999", `"99999" is not a port`},
		{"--allow-net=*", "leave the list out (bare --allow-net)"},
		{"--allow-net=false", "leave --allow-net out to grant nothing"},
		{"--deny-net", "give a list: --deny-net=ENTRY,…"},
		{"--deny-env", "give a list: --deny-env=ENTRY,…"},
		{"--allow-env=1TOKEN", `"1TOKEN" is not an environment variable name`},
		{"--allow-env=A,,B", "an empty entry"},
		{"--deny-env=A-B", `"A-B" is not an environment variable name`},
	} {
		for _, cmd := range []string{"run", "check", "dry-run", "compile", "graph", "plan", "resume", "apply", "agent"} {
			code, stdout, stderr := runCLI(t, cmd, tc.flag, plan)
			if code != exitUsage || stdout != "" || !strings.Contains(stderr, tc.want) {
				t.Errorf("%s %s: exit %d, stdout %q; want 2 and %q in:\n%s", cmd, tc.flag, code, stdout, tc.want, stderr)
			}
		}
	}
	// Good flags, bare and with lists, repeated, are taken by the
	// commands that check a plan too, so that one command line works
	// for all of them.
	for _, cmd := range []string{"check", "compile", "dry-run", "run"} {
		args := []string{cmd, "--allow-net", "--allow-net=10.0.0.0/8,[::1]:8080", "--deny-net=*.internal.example", "--allow-env=A,B", "--allow-env", "--deny-env=SECRET", plan}
		if code, _, stderr := runCLI(t, args...); code != exitOK {
			t.Errorf("%s: exit %d\n%s", cmd, code, stderr)
		}
	}
}

// TestBuiltinHTTPNeedsAllowNet: a plan that calls http.get or
// http.request checks and simulates as before; without --allow-net its
// run stops before anything runs; with a list, a host outside it fails
// the call with permission-denied; named, it is reached.
func TestBuiltinHTTPNeedsAllowNet(t *testing.T) {
	srv := newHits(t)
	dir := writeFiles(t, map[string]string{"p.plan": `input {
  base: string
}

first: echo(value: "before") -> †state.before
get: http.get(url: †input.base + "/a") -> †state.got || †state.failed
send: http.request(method: "POST", url: †input.base + "/transfer", body: {amount: 100}) -> †state.sent || †state.refused
  approve "Send?"

output {
  before: †state.before
  status: has(†state.got) ? †state.got.status : 0
  failed: has(†state.failed) ? †state.failed.message : ""
  code: has(†state.failed) ? †state.failed.code : ""
  sent: has(†state.sent) ? †state.sent.status : 0
  refused: has(†state.refused) ? †state.refused.code : ""
}
`})
	plan := filepath.Join(dir, "p.plan")
	input := fmt.Sprintf(`{"base": %q}`, srv.URL)
	if code, stdout, stderr := runCLI(t, "check", plan); code != exitOK {
		t.Fatalf("check: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLI(t, "dry-run", "--input", input, plan); code != exitOK {
		t.Fatalf("dry-run: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr := runCLI(t, "run", "--yes", "--input", input, plan)
	for _, want := range []string{
		"obelisk run: http.get reaches the network, which is off: run again with --allow-net=HOST,… naming the hosts the plan may reach (bare --allow-net: any public host), or answer it in a mocks file",
		"obelisk run: http.request reaches the network, which is off",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("run without --allow-net: stderr does not say %q:\n%s", want, stderr)
		}
	}
	if code != exitUsage || stdout != "" || strings.Contains(stderr, "completed") {
		t.Fatalf("run without --allow-net: exit %d, stdout %q: the run started\n%s", code, stdout, stderr)
	}

	// Allowed elsewhere: the calls fail and say which grant would allow
	// the host: in the plan's data by its name in the library, and on
	// stderr as the flag.
	code, stdout, stderr = runCLI(t, "run", "--yes", "--no-journal", "--allow-net=api.example.com", "--input", input, plan)
	if code != exitOK || !strings.Contains(stdout, `"code": "permission-denied"`) ||
		!strings.Contains(stdout, "http.get: "+srv.host()+" is not among the allowed hosts: allow "+srv.host()+" (permission.NetOptions.Allow)") ||
		!strings.Contains(stderr, "http.get: "+srv.host()+" is not in --allow-net: run again with --allow-net="+srv.host()) {
		t.Fatalf("run with another host allowed: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// Any public host: loopback is not one.
	code, stdout, _ = runCLI(t, "run", "--yes", "--no-journal", "--allow-net", "--input", input, plan)
	if code != exitOK || !strings.Contains(stdout, "is a loopback address, reached only when named") {
		t.Fatalf("run with bare --allow-net: exit %d\n%s", code, stdout)
	}
	if n := srv.count(); n != 0 {
		t.Fatalf("the server got %d requests", n)
	}
	code, stdout, stderr = runCLI(t, "run", "--yes", "--no-journal", "--allow-net="+srv.host(), "--input", input, plan)
	if code != exitOK || !strings.Contains(stdout, `"status": 200`) || !strings.Contains(stdout, `"sent": 200`) || srv.count() != 2 {
		t.Fatalf("run with the host allowed: exit %d, %d requests\n%s\n%s", code, srv.count(), stdout, stderr)
	}
}

// TestResumeTakesGrantsFromItsCommandLine: a resumed run has the grants
// of the resume command, not those of the run it continues; without them
// it does not start, and still waits.
func TestResumeTakesGrantsFromItsCommandLine(t *testing.T) {
	srv := newHits(t)
	dir := writeFiles(t, map[string]string{"p.plan": "input {\n  base: string\n}\n\nsend: http.request(method: \"POST\", url: †input.base + \"/send\") -> †state.sent\n  approve \"Send?\"\n\noutput †state.sent.status\n"})
	state := filepath.Join(dir, "state")
	input := fmt.Sprintf(`{"base": %q}`, srv.URL)
	if code, _, stderr := runCLI(t, "run", "--state-dir", state, "--run-id", "r1", "--allow-net="+srv.host(), "--input", input, filepath.Join(dir, "p.plan")); code != exitWaiting {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "approve", "--state-dir", state, "r1"); code != exitOK {
		t.Fatalf("approve: exit %d\n%s", code, stderr)
	}
	code, _, stderr := runCLI(t, "resume", "--state-dir", state, "r1")
	if code != exitUsage || !strings.Contains(stderr, "obelisk resume: http.request reaches the network, which is off: run again with --allow-net=HOST") {
		t.Fatalf("resume without --allow-net: exit %d\n%s", code, stderr)
	}
	if _, stdout, _ := runCLI(t, "runs", "--state-dir", state); !strings.Contains(stdout, "waiting") || srv.count() != 0 {
		t.Fatalf("after the refused resume (%d requests):\n%s", srv.count(), stdout)
	}
	code, stdout, stderr := runCLI(t, "resume", "--state-dir", state, "--allow-net="+srv.host(), "r1")
	if code != exitOK || strings.TrimSpace(stdout) != "200" || srv.count() != 1 {
		t.Fatalf("resume with --allow-net: exit %d, %d requests\n%s\n%s", code, srv.count(), stdout, stderr)
	}
}

// TestSecretsStayOut: the user information, token and key an HTTP tool
// takes from the environment appear nowhere a plan's author or a reader
// of the run can see: not in the output, the messages, the events, the
// recording, the journal or show, though the server echoes them back.
func TestSecretsStayOut(t *testing.T) {
	srv := newHits(t)
	const user, password, token, key = "svc-user", "pa55w0rd-Q7", "tok-9f8e7d6c5b", "key-0a1b2c3d4e"
	t.Setenv("OBELISK_TEST_BASE", "http://"+user+":"+password+"@"+srv.host())
	t.Setenv("OBELISK_TEST_TOKEN", token)
	t.Setenv("OBELISK_TEST_KEY", key)
	tools := `{"tools": [
  {"name": "lookup", "inputSchema": {"type": "object", "properties": {"what": {"type": "string"}}, "required": ["what"]},
   "annotations": {"readOnlyHint": true},
   "http": {"url": "${OBELISK_TEST_BASE}/{what}?token=${OBELISK_TEST_TOKEN}", "headers": {"X-Api-Key": "${OBELISK_TEST_KEY}"}}}
]}`
	plan := `ok: lookup(what: "item") -> †state.ok
bad: lookup(what: "status/401") -> †state.bad || †state.denied

output {
  ok: †state.ok
  bad: †state.bad
  denied: †state.denied.message
}
`
	dir := writeFiles(t, map[string]string{"tools.json": tools, "p.plan": plan})
	state := filepath.Join(dir, "state")
	events, record := filepath.Join(dir, "events.jsonl"), filepath.Join(dir, "calls.jsonl")
	code, stdout, stderr := runCLI(t, "run", "--tools", filepath.Join(dir, "tools.json"), "--state-dir", state, "--run-id", "s1", "--events", events, "--record", record,
		"--allow-env=OBELISK_TEST_BASE,OBELISK_TEST_TOKEN,OBELISK_TEST_KEY", "--allow-net="+srv.host(), filepath.Join(dir, "p.plan"))
	if code != exitOK || srv.count() != 2 || !strings.Contains(stdout, `"denied": "GET http://`+srv.host()+`/status%2F401: 401 Unauthorized`) {
		t.Fatalf("run: exit %d, %d requests\n%s\n%s", code, srv.count(), stdout, stderr)
	}
	seen := map[string]string{"stdout": stdout, "stderr": stderr}
	for _, f := range []string{events, record} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		seen[filepath.Base(f)] = string(b)
	}
	for _, args := range [][]string{{"show", "--state-dir", state, "s1"}, {"show", "--state-dir", state, "--events", "--format", "json", "s1"}, {"runs", "--state-dir", state}} {
		_, out, errOut := runCLI(t, args...)
		seen[strings.Join(args, " ")] = out + errOut
	}
	files, _ := os.ReadDir(state)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(state, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		seen["the journal's "+f.Name()] = string(b)
	}
	if !strings.Contains(seen["show --state-dir "+state+" s1"], "${OBELISK_TEST_TOKEN}") {
		t.Errorf("show does not show the echoed token by name:\n%s", seen["show --state-dir "+state+" s1"])
	}
	basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	for where, text := range seen {
		for _, secret := range []string{password, token, key, basic} {
			if strings.Contains(text, secret) {
				t.Errorf("%s shows the secret %q", where, secret)
			}
		}
	}
}

// TestWeakSecretWarned: a secret that could be an ordinary word is named
// in a warning before the run; a response that echoes it is withheld
// (secret-withheld), the word never shown; another tool's result, without
// it, is left whole, no word of it replaced.
func TestWeakSecretWarned(t *testing.T) {
	srv := newHits(t)
	t.Setenv("OBELISK_TEST_BASE", "http://"+srv.host())
	t.Setenv("OBELISK_TEST_WORD", "wrong")
	tools := `{"tools": [
  {"name": "lookup", "inputSchema": {"type": "object", "properties": {"what": {"type": "string"}}, "required": ["what"]},
   "annotations": {"readOnlyHint": true},
   "http": {"url": "${OBELISK_TEST_BASE}/{what}", "headers": {"X-Api-Key": "${OBELISK_TEST_WORD}"}}},
  {"name": "plain", "inputSchema": {"type": "object", "properties": {"what": {"type": "string"}}, "required": ["what"]},
   "annotations": {"readOnlyHint": true},
   "http": {"url": "${OBELISK_TEST_BASE}/{what}"}}
]}`
	plan := `a: lookup(what: "item") -> †state.a || †state.err
b: plain(what: "what went wrong") -> †state.b

output {
  err: †state.err.code
  b: †state.b.path
}
`
	dir := writeFiles(t, map[string]string{"tools.json": tools, "p.plan": plan})
	code, stdout, stderr := runCLI(t, "run", "--tools", filepath.Join(dir, "tools.json"), "--no-journal",
		"--allow-env=OBELISK_TEST_BASE,OBELISK_TEST_WORD", "--allow-net="+srv.host(), filepath.Join(dir, "p.plan"))
	if code != exitOK || !strings.Contains(stderr, "obelisk run: warning: lookup (its http block in ") || !strings.Contains(stderr, "sends ${OBELISK_TEST_WORD}, too short or too plain") {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, `"err": "secret-withheld"`) || !strings.Contains(stdout, `"b": "/what%20went%20wrong"`) {
		t.Errorf("the output:\n%s", stdout)
	}
}

// TestWeakSecretWarnedByServer: obelisk mcp-server, whose tools any plan
// may call, names at start-up each tool that sends a secret too short or
// too plain to hide, as obelisk run does for the tools of its plan, and
// only those.
func TestWeakSecretWarnedByServer(t *testing.T) {
	tools := `{"tools": [
  {"name": "lookup", "inputSchema": {"type": "object", "properties": {"what": {"type": "string"}}, "required": ["what"]},
   "http": {"url": "${OBELISK_TEST_BASE}/{what}", "headers": {"X-Api-Key": "${OBELISK_TEST_WORD}"}}},
  {"name": "strong", "inputSchema": {"type": "object", "properties": {"what": {"type": "string"}}, "required": ["what"]},
   "http": {"url": "${OBELISK_TEST_BASE}/{what}", "headers": {"Authorization": "Bearer ${OBELISK_TEST_TOKEN}"}}},
  {"name": "plain", "inputSchema": {"type": "object", "properties": {"what": {"type": "string"}}, "required": ["what"]},
   "http": {"url": "${OBELISK_TEST_BASE}/{what}"}}
]}`
	dir := writeFiles(t, map[string]string{"tools.json": tools})
	cmd := obelisk(t, dir, "mcp-server", "--state-dir", t.TempDir(), "--tools", "tools.json",
		"--allow-env=OBELISK_TEST_BASE,OBELISK_TEST_WORD,OBELISK_TEST_TOKEN", "--allow-net=127.0.0.1")
	cmd.Env = append(cmd.Env, "OBELISK_TEST_BASE=http://127.0.0.1:9", "OBELISK_TEST_WORD=wrong", "OBELISK_TEST_TOKEN=tok-3f9a1c7e5b")
	var stderr strings.Builder
	cmd.Stderr = &stderr // stdin is empty: the server starts, warns and ends
	if err := cmd.Run(); err != nil {
		t.Fatalf("mcp-server: %v\n%s", err, stderr.String())
	}
	got := stderr.String()
	if !strings.Contains(got, "obelisk mcp-server: warning: lookup (its http block in ") || !strings.Contains(got, "sends ${OBELISK_TEST_WORD}, too short or too plain") {
		t.Errorf("no warning of lookup's secret:\n%s", got)
	}
	if n := strings.Count(got, "warning:"); n != 1 || strings.Contains(got, "wrong") || strings.Contains(got, "tok-3f9a1c7e5b") {
		t.Errorf("%d warnings, or a secret shown:\n%s", n, got)
	}
}
