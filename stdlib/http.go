package stdlib

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/toolkit/permission"
)

// The built-in HTTP tools reach only the hosts the operator allows
// (Options.Net): without a grant they are registered, so that plans
// calling them check, and every call fails with code permission-denied.
// They follow redirects to any host the grants allow, each checked before
// it is followed; Authorization, Proxy-Authorization and Cookie headers
// are not sent past the first origin.

const httpResultSchema = `{"type":"object","properties":{"status":{"type":"integer"},"headers":{"type":"object","additionalProperties":{"type":"string"}},"body":{}},"required":["status","headers","body"]}`

// NeedsNetwork reports whether the built-in tool of that name reaches the
// network, which the operator must allow (Options.Net).
func NeedsNetwork(name string) bool {
	return name == "http.get" || name == "http.request"
}

// httpTool is http.get, which sends GET and no body, or http.request.
func httpTool(opts Options, name string) toolkit.Tool {
	getOnly := name == "http.get"
	client := opts.Net.Client(permission.ClientOptions{Redirects: permission.AnyOrigin})
	return toolkit.ToolFunc(func(ctx context.Context, args map[string]any) (any, error) {
		method := http.MethodGet
		if m, ok := args["method"].(string); ok && !getOnly {
			method = strings.ToUpper(m)
		}
		var body io.Reader
		if b, ok := args["body"]; ok && !getOnly {
			enc, err := json.Marshal(b)
			if err != nil {
				return nil, &toolkit.Error{Code: toolkit.CodeInvalidArguments, Message: fmt.Sprintf("%s: the body: %v", name, err), NotRetryable: true}
			}
			body = bytes.NewReader(enc)
		}
		req, err := http.NewRequestWithContext(ctx, method, args["url"].(string), body)
		if err == nil && (req.URL.Scheme != "http" && req.URL.Scheme != "https" || req.URL.Host == "") {
			err = errors.New("it is not an http or https URL with a host")
		}
		if err != nil {
			return nil, &toolkit.Error{Code: toolkit.CodeInvalidArguments, Message: fmt.Sprintf("%s: %v", name, err), NotRetryable: true}
		}
		if err := opts.Net.Allowed(req.URL); err != nil {
			return nil, prefixed(name, err)
		}
		where := method + " " + shown(req.URL)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		// The call's idempotency key, the same for its retries and across
		// resumes of the run, lets a server act on it once.
		if key := toolkit.IdempotencyKey(ctx); key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		if hs, ok := args["headers"].(map[string]any); ok {
			for k, v := range hs {
				req.Header.Set(k, fmt.Sprint(v))
			}
		}
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			var re *toolkit.Error
			if errors.As(err, &re) {
				return nil, prefixed(name+": "+where, re)
			}
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // its message repeats the whole URL
			}
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(io.LimitReader(resp.Body, opts.MaxBodyBytes+1))
		if err != nil {
			return nil, fmt.Errorf("reading the response of %s: %w", where, err)
		}
		if int64(len(raw)) > opts.MaxBodyBytes {
			return nil, &toolkit.Error{Code: "too-large", Message: fmt.Sprintf("the response of %s is larger than %d bytes", where, opts.MaxBodyBytes), NotRetryable: true}
		}
		headers := map[string]any{}
		for k := range resp.Header {
			headers[k] = resp.Header.Get(k)
		}
		var out any = string(raw)
		if strings.Contains(resp.Header.Get("Content-Type"), "json") {
			if v, err := toolkit.DecodeJSON(raw); err == nil {
				out = v
			}
		}
		if resp.StatusCode >= 500 {
			return nil, fmt.Errorf("%s: server error %s", where, resp.Status)
		}
		return map[string]any{"status": int64(resp.StatusCode), "headers": headers, "body": out}, nil
	})
}

// prefixed returns a permission error with its message prefixed.
func prefixed(prefix string, err error) error {
	var re *toolkit.Error
	if !errors.As(err, &re) {
		return fmt.Errorf("%s: %w", prefix, err)
	}
	return &toolkit.Error{Code: re.Code, Message: prefix + ": " + re.Message, NotRetryable: re.NotRetryable}
}

// shown is a URL for messages: without its user information.
func shown(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}
