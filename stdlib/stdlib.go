// Package stdlib provides the built-in tools every plan can call: HTTP
// requests to the hosts the operator allows, JSON selection, bounded text
// formatting, files confined to a root directory the operator names, sleep
// and echo.
package stdlib

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/toolkit/permission"
)

// Options configure the built-in tools.
type Options struct {
	// FilesRoot is the directory file.read and file.write work in; they
	// are not registered when it is empty, so a plan touches no file
	// unless its user allows it.
	FilesRoot string
	// Net is the network http.get and http.request may reach; with none
	// (nil) a call fails with code permission-denied.
	Net *permission.Net
	// MaxBodyBytes bounds an HTTP response body and a file read (default
	// 10 MiB).
	MaxBodyBytes int64
}

// Register adds the built-in tools to a registry.
func Register(reg *toolkit.Registry, opts Options) error {
	tools, err := builtins(opts)
	if err != nil {
		return err
	}
	for _, t := range tools {
		if err := reg.Register(t.def, t.impl); err != nil {
			return err
		}
	}
	return nil
}

// Definitions returns the definitions of every built-in tool, the file
// tools' included, sorted by name: the signatures a plan is checked
// against, whether or not the file tools run.
func Definitions() []toolkit.Definition {
	tools, _ := builtins(Options{FilesRoot: string(filepath.Separator)})
	out := make([]toolkit.Definition, len(tools))
	for i, t := range tools {
		out[i] = t.def
	}
	slices.SortFunc(out, func(a, b toolkit.Definition) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// builtin is a built-in tool.
type builtin struct {
	def  toolkit.Definition
	impl toolkit.Tool
}

// builtins returns the built-in tools the options make.
func builtins(opts Options) ([]builtin, error) {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 10 << 20
	}
	yes := true
	tools := []builtin{
		{def("echo", "Returns its value unchanged.",
			`{"type":"object","properties":{"value":{"description":"any value"}},"required":["value"]}`, ``,
			toolkit.Annotations{ReadOnly: true, Latency: "1ms"}),
			toolkit.ToolFunc(func(ctx context.Context, args map[string]any) (any, error) { return args["value"], nil })},
		{def("sleep", "Waits for a duration such as 500ms or 2s, then returns null.",
			`{"type":"object","properties":{"duration":{"type":"string","description":"a Go duration: 300ms, 1.5s, 2m"}},"required":["duration"]}`, `{"type":"null"}`,
			toolkit.Annotations{ReadOnly: true}),
			toolkit.ToolFunc(sleep)},
		{def("json.select", "Selects a part of a JSON value with a path such as $.items[0].name or items[0].name.",
			`{"type":"object","properties":{"value":{"description":"the value to select from"},"path":{"type":"string"}},"required":["value","path"]}`, ``,
			toolkit.Annotations{ReadOnly: true, Latency: "1ms"}),
			toolkit.ToolFunc(selectTool)},
		{def("text.format", "Fills a Go text/template with values: {{.name}} inserts a value, {{range .items}}…{{end}} repeats ({{define}} and {{template}} are not offered; the work and the text are bounded).",
			`{"type":"object","properties":{"template":{"type":"string"},"values":{"type":"object"}},"required":["template"]}`, `{"type":"string"}`,
			toolkit.Annotations{ReadOnly: true, Latency: "1ms"}),
			toolkit.ToolFunc(formatter{max: opts.MaxBodyBytes, work: maxFormatWork}.call)},
		{def("http.get", "Fetches a URL with GET and returns its status, headers and body (JSON bodies decoded).",
			`{"type":"object","properties":{"url":{"type":"string"},"headers":{"type":"object","additionalProperties":{"type":"string"}}},"required":["url"]}`,
			httpResultSchema, toolkit.Annotations{ReadOnly: true, Latency: "300ms"}),
			httpTool(opts, "http.get")},
		{def("http.request", "Sends an HTTP request (any method, optional JSON body, the call's Idempotency-Key header) and returns its status, headers and body.",
			`{"type":"object","properties":{"method":{"type":"string","default":"GET"},"url":{"type":"string"},"headers":{"type":"object","additionalProperties":{"type":"string"}},"body":{"description":"sent as JSON"}},"required":["url"]}`,
			httpResultSchema, toolkit.Annotations{Destructive: &yes, Latency: "300ms"}),
			httpTool(opts, "http.request")},
	}
	if opts.FilesRoot != "" {
		root, err := filepath.Abs(opts.FilesRoot)
		if err != nil {
			return nil, fmt.Errorf("files root: %w", err)
		}
		files := &files{dir: root, max: opts.MaxBodyBytes}
		tools = append(tools,
			builtin{def("file.read", "Reads a text file under the files root.",
				`{"type":"object","properties":{"path":{"type":"string","description":"relative to the files root"}},"required":["path"]}`, `{"type":"string"}`,
				toolkit.Annotations{ReadOnly: true, Latency: "1ms"}),
				toolkit.ToolFunc(files.read)},
			builtin{def("file.write", "Writes a text file under the files root, creating directories as needed and replacing the file whole; writing the same content twice has no further effect.",
				`{"type":"object","properties":{"path":{"type":"string","description":"relative to the files root"},"content":{"type":"string"}},"required":["path","content"]}`,
				`{"type":"object","properties":{"path":{"type":"string"},"bytes":{"type":"integer"}},"required":["path","bytes"]}`,
				toolkit.Annotations{Idempotent: true, Latency: "1ms"}),
				toolkit.ToolFunc(files.write)},
		)
	}
	return tools, nil
}

func def(name, desc, in, out string, ann toolkit.Annotations) toolkit.Definition {
	d := toolkit.Definition{Name: name, Description: desc, InputSchema: json.RawMessage(in), Annotations: ann}
	if out != "" {
		d.OutputSchema = json.RawMessage(out)
	}
	return d
}

func sleep(ctx context.Context, args map[string]any) (any, error) {
	d, err := time.ParseDuration(args["duration"].(string))
	if err != nil || d < 0 {
		return nil, &toolkit.Error{Code: toolkit.CodeInvalidArguments, Message: fmt.Sprintf("sleep: %q is not a duration such as 500ms", args["duration"]), NotRetryable: true}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func selectTool(ctx context.Context, args map[string]any) (any, error) {
	v, err := Select(args["value"], args["path"].(string))
	if err != nil {
		return nil, &toolkit.Error{Code: toolkit.CodeInvalidArguments, Message: err.Error(), NotRetryable: true}
	}
	return v, nil
}

// Select follows a path such as $.a.b[0].c, a.b[0], or ["key with space"]
// into a JSON value.
func Select(v any, path string) (any, error) {
	p := strings.TrimPrefix(strings.TrimSpace(path), "$")
	for len(p) > 0 {
		switch {
		case p[0] == '.':
			p = p[1:]
		case p[0] == '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return nil, fmt.Errorf("path %q: '[' without ']'", path)
			}
			key := p[1:end]
			p = p[end+1:]
			if n, err := strconv.Atoi(key); err == nil {
				list, ok := v.([]any)
				if !ok {
					return nil, fmt.Errorf("path %q: [%d] indexes a value that is not a list", path, n)
				}
				if n < 0 {
					n += len(list)
				}
				if n < 0 || n >= len(list) {
					return nil, fmt.Errorf("path %q: index %s is out of range (the list has %d elements)", path, key, len(list))
				}
				v = list[n]
				continue
			}
			s, err := strconv.Unquote(key)
			if err != nil {
				s = strings.Trim(key, `'`)
			}
			obj, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("path %q: [%s] selects a field of a value that is not an object", path, key)
			}
			v = obj[s]
		default:
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			name := p[:end]
			p = p[end:]
			obj, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("path %q: .%s selects a field of a value that is not an object", path, name)
			}
			fv, present := obj[name]
			if !present {
				return nil, fmt.Errorf("path %q: no field %s", path, name)
			}
			v = fv
		}
	}
	return v, nil
}
