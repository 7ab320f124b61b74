package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// The tests of obelisk mcp-server with clients and servers nobody here
// wrote, from npm (versions pinned in testdata/mcp/package-lock.json):
// the official TypeScript SDK's client, the MCP Inspector's CLI, and the
// reference servers. They need Node.js and the packages, which the tests
// never install themselves (go test stays offline and writes nothing into
// the tree): .ci/run installs them with npm ci in a directory outside the
// tree, which it names in $OBELISK_TEST_NPM, and a test without them
// skips, saying how.

// npmDir holds the package.json and lock file of the npm packages of the
// tests, and client.mjs.
const npmDir = "testdata/mcp"

// npmEnv names the environment variable of the directory the packages are
// installed in: a copy of npmDir's package.json and package-lock.json, in
// which npm ci ran. Without it, npmDir itself.
const npmEnv = "OBELISK_TEST_NPM"

// npmInstall is how to install the packages outside the tree.
const npmInstall = `export OBELISK_TEST_NPM=$HOME/.cache/obelisk-test-npm; mkdir -p $OBELISK_TEST_NPM && cp cmd/obelisk/testdata/mcp/package*.json $OBELISK_TEST_NPM && (cd $OBELISK_TEST_NPM && npm ci --no-audit --no-fund)`

// npmPackages returns a directory of the test's own with npmDir's
// client.mjs and the installed packages (node_modules, linked). It skips
// the test when node is not installed, or the packages are not installed
// as the lock file pins them.
func npmPackages(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the tests with MCP clients and servers from npm need Node.js, then " + npmInstall)
	}
	src, err := filepath.Abs(npmDir)
	if err != nil {
		t.Fatal(err)
	}
	dir := cmp.Or(os.Getenv(npmEnv), src)
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	installedLock, _ := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	lockInfo, lerr := os.Stat(filepath.Join(dir, "package-lock.json"))
	installed, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
	if err != nil || lerr != nil || !bytes.Equal(installedLock, lock) || installed.ModTime().Before(lockInfo.ModTime()) {
		t.Skip("the npm packages of the MCP client tests are not installed in $" + npmEnv + ", or not as testdata/mcp/package-lock.json pins them: " + npmInstall)
	}
	own := t.TempDir()
	client, err := os.ReadFile(filepath.Join(src, "client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(own, "client.mjs"), client, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "node_modules"), filepath.Join(own, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return own
}

// fsServer is the --mcp of the reference filesystem server, serving root.
func fsServer(npm, root string) string {
	return fmt.Sprintf("fs=node '%s' '%s'", filepath.Join(npm, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"), root)
}

// clientSaw is what client.mjs prints.
type clientSaw struct {
	Tools       []string `json:"tools"`
	BrokenOK    bool     `json:"brokenOK"`
	Diagnostics []struct {
		Code, Message, Fix string
	} `json:"diagnostics"`
	Run      runAnswer `json:"run"`
	Waiting  runAnswer `json:"waiting"`
	Approved runAnswer `json:"approved"`
	Asked    string    `json:"asked"`
}

type runAnswer struct {
	Run     string   `json:"run"`
	Status  string   `json:"status"`
	Output  any      `json:"output"`
	Waiting []string `json:"waiting"`
	Next    string   `json:"next"`
}

// node runs a script in npm, npmPackages' directory, and decodes what it
// prints on stdout.
func node(t *testing.T, npm string, out any, args ...string) {
	t.Helper()
	nodeExit(t, npm, out, false, args...)
}

// nodeExit is node for a command that fails (failing set) once it has
// printed its JSON, as the Inspector's CLI does when a tool answers
// isError: true.
func nodeExit(t *testing.T, npm string, out any, failing bool, args ...string) {
	t.Helper()
	cmd := exec.Command("node", args...)
	cmd.Dir = npm
	cmd.Env = append(os.Environ(), "OBELISK_TEST_MAIN=1", "OBELISK_LOG=error")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); (err != nil) != failing {
		t.Fatalf("node %s: %v (want it to fail: %v)\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, failing, stdout.String(), stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("node %s printed no JSON: %v\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
}

// checkSaw checks what client.mjs saw, and that the write that waits
// wrote nothing while the approved one did.
func checkSaw(t *testing.T, saw *clientSaw, root, stateDir string) {
	t.Helper()
	if saw.BrokenOK || len(saw.Diagnostics) != 1 || saw.Diagnostics[0].Code != "unknown-argument" || saw.Diagnostics[0].Fix != "rename the argument to path" {
		t.Errorf("the broken plan's diagnostics: %+v", saw.Diagnostics)
	}
	if saw.Run.Status != "completed" || fmt.Sprint(saw.Run.Output) != "map[a:alpha\n b:beta\n]" {
		t.Errorf("the run: %+v", saw.Run)
	}
	wantNext := fmt.Sprintf("obelisk approve --state-dir %s %s w", stateDir, saw.Waiting.Run)
	if saw.Waiting.Status != "waiting" || !strings.Contains(saw.Waiting.Next, wantNext) {
		t.Errorf("the write that waits: %+v; want a next step with %q", saw.Waiting, wantNext)
	}
	if _, err := os.Stat(filepath.Join(root, "out.txt")); err == nil {
		t.Errorf("out.txt was written before anyone approved it")
	}
	if saw.Approved.Status != "completed" || !strings.Contains(saw.Asked, "calls fs.write_file: Write out.txt?") {
		t.Errorf("the approved write: %+v, the person was asked %q", saw.Approved, saw.Asked)
	}
	if b, err := os.ReadFile(filepath.Join(root, "approved.txt")); err != nil || string(b) != "written by a plan" {
		t.Errorf("approved.txt: %q, %v", b, err)
	}
}

// TestNodeClient drives obelisk mcp-server from the official TypeScript
// SDK's client over stdio, against the reference filesystem server; then a
// person approves the waiting write with obelisk approve, and obelisk
// resume finishes it.
func TestNodeClient(t *testing.T) {
	t.Parallel()
	npm := npmPackages(t)
	root, stateDir := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("alpha\n"), 0o644)
	os.WriteFile(filepath.Join(root, "b.txt"), []byte("beta\n"), 0o644)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var saw clientSaw
	node(t, npm, &saw, "client.mjs", "stdio", root, exe, "mcp-server", "--state-dir", stateDir, "--mcp", fsServer(npm, root))
	checkSaw(t, &saw, root, stateDir)

	if r := runObelisk(t, root, "approve", "--state-dir", stateDir, saw.Waiting.Run, "w"); r.code != exitOK {
		t.Fatalf("obelisk approve: %+v", r)
	}
	r := runObelisk(t, root, "resume", "--state-dir", stateDir, saw.Waiting.Run)
	if b, err := os.ReadFile(filepath.Join(root, "out.txt")); r.code != exitOK || err != nil || string(b) != "written by a plan" {
		t.Errorf("obelisk resume of the approved run: %+v; out.txt %q, %v", r, b, err)
	}
}

// TestNodeClientHTTP drives obelisk mcp-server over streamable HTTP, from
// the TypeScript SDK's client and the Inspector's CLI.
func TestNodeClientHTTP(t *testing.T) {
	t.Parallel()
	npm := npmPackages(t)
	root, stateDir := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("alpha\n"), 0o644)
	os.WriteFile(filepath.Join(root, "b.txt"), []byte("beta\n"), 0o644)
	const token = "t0ken-of-the-test"
	srv := obelisk(t, root, "mcp-server", "--http", "127.0.0.1:0", "--state-dir", stateDir, "--mcp", fsServer(npm, root))
	srv.Env = append(srv.Env, envMCPToken+"="+token, "OBELISK_LOG=warn")
	stderr, err := srv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv.Process.Signal(syscall.SIGINT)
		srv.Wait()
	}()
	lines := bufio.NewScanner(stderr)
	url := ""
	for url == "" && lines.Scan() {
		url = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/mcp`).FindString(lines.Text())
	}
	if url == "" {
		t.Fatalf("the server did not say where it serves")
	}
	go func() {
		for lines.Scan() { // what it logs after, read so that it never blocks
		}
	}()
	var saw clientSaw
	node(t, npm, &saw, "client.mjs", "http", root, url, token)
	checkSaw(t, &saw, root, stateDir)

	inspector := filepath.Join(npm, "node_modules/.bin/mcp-inspector")
	var listed struct{ Tools []struct{ Name string } }
	node(t, npm, &listed, inspector, "--cli", url, "--transport", "http", "--header", "Authorization: Bearer "+token, "--method", "tools/list")
	if len(listed.Tools) != 7 {
		t.Errorf("the Inspector listed %+v", listed.Tools)
	}
	var called struct {
		Content []struct{ Text string }
	}
	plan := fmt.Sprintf("fs.list_directory(path: %q) -> $state.l\noutput $state.l.content\n", root)
	node(t, npm, &called, inspector, "--cli", url, "--transport", "http", "--header", "Authorization: Bearer "+token,
		"--method", "tools/call", "--tool-name", "run_plan", "--tool-arg", "plan="+plan)
	if len(called.Content) != 1 || !strings.Contains(called.Content[0].Text, `"status":"completed"`) || !strings.Contains(called.Content[0].Text, "[FILE] a.txt") {
		t.Errorf("the Inspector's run_plan: %+v", called)
	}
	// Without the token, the Inspector gets nothing.
	cmd := exec.Command("node", inspector, "--cli", url, "--transport", "http", "--method", "tools/list")
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("the Inspector without the token listed the tools:\n%s", out)
	}
}

// TestInspectorStdio lists and calls obelisk mcp-server with the
// Inspector's CLI over stdio.
func TestInspectorStdio(t *testing.T) {
	t.Parallel()
	npm := npmPackages(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	inspector := filepath.Join(npm, "node_modules/.bin/mcp-inspector")
	server := []string{"-e", "OBELISK_TEST_MAIN=1", "-e", "OBELISK_LOG=error", exe, "mcp-server", "--state-dir", t.TempDir()}
	var listed struct {
		Tools []struct {
			Name         string
			OutputSchema map[string]any `json:"outputSchema"`
			Annotations  map[string]any `json:"annotations"`
		}
	}
	node(t, npm, &listed, append(append([]string{inspector, "--cli"}, server...), "--method", "tools/list")...)
	if len(listed.Tools) != 7 {
		t.Errorf("the Inspector listed %+v", listed.Tools)
	}
	for _, tool := range listed.Tools {
		if tool.OutputSchema["type"] != "object" || tool.Annotations["openWorldHint"] == nil {
			t.Errorf("the Inspector's %s: output schema %v, hints %v", tool.Name, tool.OutputSchema, tool.Annotations)
		}
	}
	var called struct {
		Content           []struct{ Text string }
		StructuredContent struct {
			OK          *bool `json:"ok"`
			Diagnostics []struct{ Code string }
		} `json:"structuredContent"`
		IsError bool `json:"isError"`
	}
	// A plan that does not check is an error, which the Inspector's CLI
	// exits with after printing the answer.
	nodeExit(t, npm, &called, true, append(append([]string{inspector, "--cli"}, server...), "--method", "tools/call", "--tool-name", "check_plan", "--tool-arg", "plan=ecko(value: 1) -> $state.x\noutput $state.x\n")...)
	if len(called.Content) != 1 || !strings.Contains(called.Content[0].Text, `unknown tool ecko (did you mean \"echo\"?)`) ||
		!called.IsError || called.StructuredContent.OK == nil || *called.StructuredContent.OK || len(called.StructuredContent.Diagnostics) != 1 {
		t.Errorf("the Inspector's check_plan: %+v", called)
	}
}
