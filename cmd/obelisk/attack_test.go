package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/obelisk-plan/obelisk/toolkit/mcp/mcptest"
)

// TestAttacks runs the attack suite in testdata/attack: plans written as
// an attacker would write them, each run by the obelisk command in a
// process of its own, in a directory of its own. Every case must be
// refused or contained, and after every case:
//
//   - the attacker's server (a loopback server the operator never allows)
//     has received no request;
//   - the planted secret (an environment variable an operator's tools file
//     sends as a header) appears in no output, no file the run left behind
//     (the journal included) and no request but in the headers of the
//     operator's own API;
//   - what the case asserts holds: its exit status, what its output must
//     and must not say, which files must not exist.
//
// A case is a txtar archive. Its comment says what the attack is, in
// lines that start with #, and holds directives, one a line:
//
//	obelisk ARGS...        a command to run; the commands run in order,
//	                       and the directives that follow one, up to the
//	                       next, check what it did
//	exit N                 the command's exit status
//	stdout RE / stderr RE  a regular expression its output must match
//	! stdout RE            ... must not match (also ! stderr)
//	absent PATH            a file that must not exist afterwards
//	same PATH              a file that must be unchanged afterwards
//	requests N             the requests the operator's API must have had
//	symlink NAME TARGET    made before the commands run
//	fifo NAME              a named pipe made before the commands run
//	env NAME=VALUE         set for the commands ($SECRET is the secret)
//	stdin "TEXT"           the commands' standard input (a Go string)
//	append NAME N "TEXT"   appends TEXT (a Go string) N times to a file
//	exec NAME              makes a file executable
//	maxrss MIB             the most memory a command may take
//	! request RE           no request to the API may match (its method,
//	                       path and query, as "GET /a?b")
//	distinct HEADER        the API's requests had different values of it
//	evil may               the attacker's server may get requests (a
//	                       case that allows it to show what they carry),
//	                       but never the secret
//
// In directives and files, $API is the operator's API (http://HOST:PORT,
// $API_HOST its HOST:PORT), $EVIL the attacker's server ($EVIL_HOST),
// $EVIL_PORT its port, $MCP_SERVER the command that starts the test MCP
// servers of toolkit/mcp/mcptest (add "calc"), $OUTSIDE a directory outside the case's that holds outside.txt and
// that nothing may touch, and $WORK the case's own directory. The secret
// is in the environment variable ATTACK_TOKEN.
func TestAttacks(t *testing.T) {
	files, err := filepath.Glob("testdata/attack/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no attacks: %v", err)
	}
	if len(files) < 30 {
		t.Errorf("the attack suite has %d cases; it must keep at least 30", len(files))
	}
	for _, file := range files {
		file, err := filepath.Abs(file)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			t.Parallel()
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			runAttack(t, ar)
		})
	}
}

// recorded is a request a test server received.
type recorded struct {
	Method, Path, Query string
	Header              http.Header
	Body                string
}

// recorder is a loopback HTTP server that keeps every request.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

func newRecorder(t *testing.T, handle func(w http.ResponseWriter, r *http.Request)) *recorder {
	rec := &recorder{}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, recorded{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Clone(), string(body)})
		rec.mu.Unlock()
		handle(w, r)
	}))
	t.Cleanup(rec.Close)
	return rec
}

func (rec *recorder) requests() []recorded {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]recorded(nil), rec.reqs...)
}

func (rec *recorder) host() string { return strings.TrimPrefix(rec.URL, "http://") }

// apiHandler plays the operator's API: /redirect?to=URL redirects,
// /echo-headers answers with the request's headers, /status/N/... with
// status N, and anything else with {"ok": true} and the path.
func apiHandler(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/status/"); ok {
		code, _ := strconv.Atoi(strings.SplitN(rest, "/", 2)[0])
		http.Error(w, "no such thing", code)
		return
	}
	switch r.URL.Path {
	case "/redirect":
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
		return
	case "/echo-headers":
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(r.Header)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"ok": true, "path": r.URL.Path, "id": "T-1"})
}

func runAttack(t *testing.T, ar *txtar.Archive) {
	api := newRecorder(t, apiHandler)
	evil := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"stolen": true}`)
	})
	secret := "tok-" + randomHex(t)
	work := t.TempDir()
	outside := t.TempDir()
	outsideText := "outside, untouched\n"
	if err := os.WriteFile(filepath.Join(outside, "outside.txt"), []byte(outsideText), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	expand := strings.NewReplacer(
		"$MCP_SERVER", "env OBELISK_TEST_MAIN= "+mcptest.EnvServer+"=1 "+exe,
		"$API_HOST", api.host(), "$API", api.URL,
		"$EVIL_HOST", evil.host(), "$EVIL_PORT", evil.host()[strings.LastIndexByte(evil.host(), ':')+1:], "$EVIL", evil.URL,
		"$OUTSIDE", outside, "$WORK", work,
	).Replace
	for _, f := range ar.Files {
		path := filepath.Join(work, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(expand(string(f.Data))), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// command is a command to run and what it must do.
	type command struct {
		args   []string
		exit   int
		checks []func(res result)
	}
	var (
		commands []*command
		envs     = []string{"ATTACK_TOKEN=" + secret}
		after    []func()
		maxRSS   int64
		stdin    []byte
		evilMay  bool
	)
	current := func(n int) *command {
		if len(commands) == 0 {
			t.Fatalf("line %d: a check before the first command", n+1)
		}
		return commands[len(commands)-1]
	}
	for n, line := range strings.Split(string(ar.Comment), "\n") {
		line = strings.TrimSpace(line)
		verb, rest, _ := strings.Cut(line, " ")
		rest = expand(strings.TrimSpace(rest))
		fail := func(format string, args ...any) {
			t.Helper()
			t.Errorf("line %d (%s): %s", n+1, line, fmt.Sprintf(format, args...))
		}
		switch verb {
		case "", "#":
		case "obelisk":
			args, err := splitArgs(rest)
			if err != nil {
				t.Fatalf("line %d: %v", n+1, err)
			}
			commands = append(commands, &command{args: args, exit: -1})
		case "exit":
			var err error
			if current(n).exit, err = strconv.Atoi(rest); err != nil {
				t.Fatalf("line %d: %v", n+1, err)
			}
		case "stdout", "stderr", "!":
			neg := verb == "!"
			if neg {
				verb, rest, _ = strings.Cut(rest, " ")
			}
			re := regexp.MustCompile(rest)
			stream := verb
			cmd := current(n)
			cmd.checks = append(cmd.checks, func(res result) {
				var out string
				switch stream {
				case "stdout":
					out = res.stdout
				case "stderr":
					out = res.stderr
				case "request":
					for _, r := range api.requests() {
						out += r.Method + " " + r.Path + "?" + r.Query + "\n"
					}
				default:
					t.Fatalf("line %d: ! %s: want stdout, stderr or request", n+1, stream)
				}
				if re.MatchString(out) == neg {
					fail := func(format string, args ...any) {
						t.Errorf("line %d (%s), obelisk %s: %s", n+1, line, strings.Join(cmd.args, " "), fmt.Sprintf(format, args...))
					}
					if neg {
						fail("%s matches, and must not:\n%s", stream, out)
					} else {
						fail("%s does not match:\n%s", stream, out)
					}
				}
			})
		case "absent":
			path := rest
			after = append(after, func() {
				if _, err := os.Lstat(abs(work, path)); err == nil {
					fail("%s exists", path)
				}
			})
		case "same":
			path := abs(work, rest)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("line %d: %v", n+1, err)
			}
			after = append(after, func() {
				now, err := os.ReadFile(path)
				if err != nil || !bytes.Equal(now, before) {
					fail("%s changed (%v)", rest, err)
				}
			})
		case "requests":
			want, err := strconv.Atoi(rest)
			if err != nil {
				t.Fatalf("line %d: %v", n+1, err)
			}
			after = append(after, func() {
				if got := len(api.requests()); got != want {
					fail("the operator's API got %d requests: %+v", got, api.requests())
				}
			})
		case "symlink":
			name, target, _ := strings.Cut(rest, " ")
			if err := os.Symlink(target, abs(work, name)); err != nil {
				t.Fatal(err)
			}
		case "fifo":
			if err := syscall.Mkfifo(abs(work, rest), 0o644); err != nil {
				t.Fatal(err)
			}
		case "env":
			envs = append(envs, strings.ReplaceAll(rest, "$SECRET", secret))
		case "stdin":
			text, err := strconv.Unquote(rest)
			if err != nil {
				t.Fatalf("line %d: %v", n+1, err)
			}
			stdin = []byte(text)
		case "append":
			fields := strings.SplitN(rest, " ", 3)
			if len(fields) != 3 {
				t.Fatalf("line %d: want append NAME N \"TEXT\"", n+1)
			}
			count, err1 := strconv.Atoi(fields[1])
			text, err2 := strconv.Unquote(fields[2])
			if err1 != nil || err2 != nil {
				t.Fatalf("line %d: %v %v", n+1, err1, err2)
			}
			f, err := os.OpenFile(abs(work, fields[0]), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString(strings.Repeat(text, count)); err != nil {
				t.Fatal(err)
			}
			f.Close()
		case "exec":
			if err := os.Chmod(abs(work, rest), 0o755); err != nil {
				t.Fatal(err)
			}
		case "distinct":
			header := rest
			after = append(after, func() {
				seen := map[string]bool{}
				for _, r := range api.requests() {
					v := r.Header.Get(header)
					if seen[v] {
						fail("two requests had %s %q", header, v)
					}
					seen[v] = true
				}
			})
		case "evil":
			evilMay = rest == "may"
		case "maxrss":
			mib, err := strconv.ParseInt(rest, 10, 64)
			if err != nil {
				t.Fatalf("line %d: %v", n+1, err)
			}
			maxRSS = mib
		default:
			t.Fatalf("line %d: unknown directive %q", n+1, verb)
		}
	}
	if len(commands) == 0 {
		t.Fatal("the case runs no command")
	}

	var outputs strings.Builder
	for _, cmd := range commands {
		res := runAttackCommand(t, work, envs, stdin, maxRSS, cmd.args)
		t.Logf("obelisk %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(cmd.args, " "), res.code, res.stdout, res.stderr)
		if cmd.exit >= 0 && res.code != cmd.exit {
			t.Errorf("obelisk %s: exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(cmd.args, " "), res.code, cmd.exit, res.stdout, res.stderr)
		}
		for _, c := range cmd.checks {
			c(res)
		}
		outputs.WriteString(res.stdout + res.stderr)
	}
	for _, a := range after {
		a()
	}

	// The invariants of every case.
	if reqs := evil.requests(); len(reqs) > 0 && !evilMay {
		t.Errorf("the attacker's server received %d requests: %+v", len(reqs), reqs)
	}
	for _, r := range evil.requests() {
		if b, _ := json.Marshal(r); bytes.Contains(b, []byte(secret)) {
			t.Errorf("the secret reached the attacker: %+v", r)
		}
	}
	for _, r := range api.requests() {
		if strings.Contains(r.Path+r.Query+r.Body, secret) {
			t.Errorf("the secret reached the API outside a header: %+v", r)
		}
	}
	if strings.Contains(outputs.String(), secret) {
		t.Errorf("the secret reached the output:\n%s", outputs.String())
	}
	filepath.WalkDir(work, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte(secret)) {
			t.Errorf("the secret was written to %s", path)
		}
		return nil
	})
	if b, err := os.ReadFile(filepath.Join(outside, "outside.txt")); err != nil || string(b) != outsideText {
		t.Errorf("the file outside the case's directory changed: %q, %v", b, err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("something was written outside the case's directory: %v", entries)
	}
}

// runAttackCommand runs obelisk in a process of its own, with a bound on
// its time so that a hang fails the case instead of the whole test run.
func runAttackCommand(t *testing.T, dir string, envs []string, stdin []byte, maxRSS int64, args []string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	if maxRSS > 0 {
		// A process that takes more than its bound runs out of address
		// space instead of taking the machine's memory (a Go process
		// maps about twice what it uses); the bound itself is checked
		// below.
		limit := strconv.FormatInt((3*maxRSS+1024)*1024, 10)
		cmd = exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", "ulimit -v " + limit + " && exec \"$0\" \"$@\"", exe}, args...)...)
	}
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "OBELISK_TEST_MAIN=1", "OBELISK_LOG=error")
	cmd.Env = append(cmd.Env, envs...)
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &out, &errb
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("obelisk %s did not finish: it hangs\nstderr:\n%s", strings.Join(args, " "), errb.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(errb.String(), "fatal error: out of memory") {
		t.Errorf("obelisk %s ran out of memory", strings.Join(args, " "))
	}
	if maxRSS > 0 {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss/1024 > maxRSS {
			t.Errorf("obelisk %s took %d MiB, more than %d MiB", strings.Join(args, " "), ru.Maxrss/1024, maxRSS)
		}
	}
	return result{code, out.String(), errb.String()}
}

func abs(dir, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, filepath.FromSlash(path))
}

func randomHex(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
