// Package cmdtool calls tools that are programs, as a tools file declares
// them: an MCP-shaped tool definition with a "command" block.
//
//	{
//	  "name": "packing.list",
//	  "inputSchema": {"type": "object", "properties": {"highs": {"type": "array", "items": {"type": "number"}}}},
//	  "command": {"argv": ["./bin/packing", "--metric"], "dir": ".", "timeout": "30s"}
//	}
//
// The program runs with the arguments of argv, without a shell, in dir
// (relative to the tools file's directory, which is also the default; an
// absolute dir is taken as it is). A program named by a path with a slash
// ("./bin/packing") is found from the tools file's directory, made
// absolute when the tool is made, never on PATH; only a bare name ("go")
// is looked up on PATH. The tool's arguments are written to its standard
// input as one JSON object; its standard output is the result (JSON
// decoded, else text, null when empty). An exit status other than 0 is an
// error with code command-failed whose message holds the status and the
// end of the program's standard error. "timeout" bounds the call; the
// program is killed when it runs out or the step is canceled.
//
// Running programs is a decision for the user, not for a plan: the command
// line enables command tools explicitly.
package cmdtool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/obelisk-plan/obelisk/toolkit"
)

// Options configure command tools.
type Options struct {
	// Dir is the directory of the tools file the tool is declared in.
	Dir string
	// MaxOutputBytes bounds the program's standard output (default 10 MiB).
	MaxOutputBytes int64
}

// spec is a "command" block.
type spec struct {
	Argv    []string `json:"argv"`
	Dir     string   `json:"dir"`
	Timeout string   `json:"timeout"`
}

var specKeys = []string{"argv", "dir", "timeout"}

// Tool is a command tool; it implements toolkit.Tool.
type Tool struct {
	name    string
	argv    []string
	dir     string
	timeout time.Duration
	max     int64
}

// New makes the tool def describes from its "command" block.
func New(def toolkit.Definition, block []byte, opts Options) (*Tool, error) {
	var sp spec
	dec := json.NewDecoder(bytes.NewReader(block))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sp); err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return nil, fmt.Errorf("unknown key %s in the command block; known keys: %s", name, strings.Join(specKeys, ", "))
		}
		return nil, fmt.Errorf("the command block: %w", err)
	}
	if len(sp.Argv) == 0 || sp.Argv[0] == "" {
		return nil, errors.New("the command block has no \"argv\": the program and its arguments, such as [\"./bin/score\", \"--json\"]")
	}
	// The tools file's directory is made absolute here, so that neither
	// the program nor the run directory depends on the directory the
	// process is in when the tool is called, and a program named by a
	// path (./prog) is never looked up on PATH.
	base, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("the tools file's directory: %w", err)
	}
	t := &Tool{name: def.Name, argv: append([]string(nil), sp.Argv...), dir: resolve(base, sp.Dir), max: opts.MaxOutputBytes}
	if t.max <= 0 {
		t.max = 10 << 20
	}
	if p := t.argv[0]; strings.ContainsAny(p, "/"+string(filepath.Separator)) {
		t.argv[0] = resolve(base, p)
	}
	if sp.Timeout != "" {
		d, err := time.ParseDuration(sp.Timeout)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("timeout: %q is not a duration such as 30s", sp.Timeout)
		}
		t.timeout = d
	}
	return t, nil
}

// Call runs the program with the arguments as JSON on its standard input.
func (t *Tool) Call(ctx context.Context, args map[string]any) (any, error) {
	in, err := json.Marshal(args)
	if err != nil {
		return nil, &toolkit.Error{Code: toolkit.CodeInvalidArguments, Message: fmt.Sprintf("%s: %v", t.name, err), NotRetryable: true}
	}
	runCtx := ctx
	if t.timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, t.timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(runCtx, t.argv[0], t.argv[1:]...)
	cmd.Dir = t.dir
	cmd.Stdin = bytes.NewReader(in)
	stdout := &limitedBuffer{max: t.max}
	stderr := &toolkit.TailWriter{Max: 4096}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = time.Second // a child that keeps the pipes open does not hold the call
	prog := filepath.Base(t.argv[0])
	err = cmd.Run()
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err() // the step's own deadline or cancellation
	case runCtx.Err() != nil:
		return nil, &toolkit.Error{Code: toolkit.CodeTimeout, Message: fmt.Sprintf("%s: %s did not finish within %s", t.name, prog, t.timeout)}
	case stdout.over:
		return nil, &toolkit.Error{Code: "too-large", Message: fmt.Sprintf("%s: %s wrote more than %d bytes", t.name, prog, t.max), NotRetryable: true}
	case err != nil:
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return nil, &toolkit.Error{Code: "command-failed", Message: fmt.Sprintf("%s: cannot run %s: %v", t.name, t.argv[0], err), NotRetryable: true}
		}
		msg := fmt.Sprintf("%s: %s %s", t.name, prog, ee.ProcessState)
		if ex := toolkit.Excerpt(stderr.Bytes(), 300); ex != "" {
			msg += ": " + ex
		}
		return nil, &toolkit.Error{Code: "command-failed", Message: msg}
	}
	return toolkit.DecodeJSONOrText(stdout.buf.Bytes()), nil
}

// resolve returns path made absolute from base, cleaned; an absolute path
// stays as it is.
func resolve(base, path string) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	return filepath.Join(base, path)
}

// limitedBuffer keeps up to max bytes and notes that more came.
type limitedBuffer struct {
	buf  bytes.Buffer
	max  int64
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := b.max - int64(b.buf.Len()); int64(len(p)) > room {
		b.over = true
		p = p[:max(room, 0)]
	}
	b.buf.Write(p)
	return n, nil
}
