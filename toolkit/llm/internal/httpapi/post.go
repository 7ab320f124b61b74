package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultRetries is how often a request that failed for a transient
// reason is retried when the settings do not say: twice, as the
// providers' own SDKs do.
const DefaultRetries = 2

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// Client posts JSON requests to one API and retries those that failed
// for a transient reason.
type Client struct {
	// HTTP sends the requests; nil means http.DefaultClient.
	HTTP *http.Client
	// Header is set on every request (authentication, API version).
	Header http.Header
	// Retries is how often a transient failure is retried: 0 takes
	// DefaultRetries, -1 means never.
	Retries int
	// Timeout bounds each attempt, the reading of its body included
	// (0: none).
	Timeout time.Duration
	// Backoff is the wait before the first retry, doubled for each
	// next one up to 8 seconds (0: half a second); a server's
	// Retry-After replaces it.
	Backoff time.Duration
}

// APIError is an HTTP error response: its status and the message of the
// body's error object (both providers answer {"error": {"message": …}}),
// or the body's start when it has none.
type APIError struct {
	Method, URL string
	StatusCode  int
	Status      string
	Message     string
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("%s %q: %s", e.Method, e.URL, e.Status)
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Response is a successful response whose body is being read; Close
// releases it and the attempt's timeout.
type Response struct {
	*http.Response
	cancel context.CancelFunc
}

// Close closes the body.
func (r *Response) Close() error {
	err := r.Body.Close()
	r.cancel()
	return err
}

// Post sends body as JSON to url and returns the response once it has
// status 200. A status of 408, 409, 429 or 5xx, or a connection that
// failed before an answer, is retried after a backoff with jitter, or
// after the time the server's Retry-After (or retry-after-ms) asks,
// unless the server says x-should-retry: false; other statuses are an
// *APIError at once. The response's body is read while ctx and the
// timeout last.
func (c *Client) Post(ctx context.Context, url string, body any) (*Response, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	retries := c.Retries
	switch {
	case retries == 0:
		retries = DefaultRetries
	case retries < 0:
		retries = 0
	}
	for attempt := 0; ; attempt++ {
		resp, wait, err := c.try(ctx, hc, url, raw)
		if err == nil {
			return resp, nil
		}
		if wait < 0 || attempt >= retries || ctx.Err() != nil {
			return nil, err
		}
		if wait == 0 {
			wait = c.backoff(attempt)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (waiting to retry after: %w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// try makes one attempt. On failure, wait is -1 when the failure is not
// transient, else how long the server asked to wait (0: not said).
func (c *Client) try(ctx context.Context, hc *http.Client, url string, raw []byte) (*Response, time.Duration, error) {
	actx, cancel := ctx, context.CancelFunc(func() {})
	if c.Timeout > 0 {
		actx, cancel = context.WithTimeout(ctx, c.Timeout)
	}
	req, err := http.NewRequestWithContext(actx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		cancel()
		return nil, -1, fmt.Errorf("making the request: %w", err)
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		cancel()
		if ctx.Err() != nil {
			return nil, -1, err
		}
		return nil, 0, err // the connection failed or the attempt timed out
	}
	if resp.StatusCode == http.StatusOK {
		return &Response{Response: resp, cancel: cancel}, 0, nil
	}
	defer cancel()
	defer resp.Body.Close()
	text, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	apiErr := &APIError{Method: http.MethodPost, URL: url, StatusCode: resp.StatusCode, Status: resp.Status, Message: message(text)}
	if !transient(resp) {
		return nil, -1, apiErr
	}
	return nil, retryAfter(resp.Header), apiErr
}

// transient reports whether a response's failure may pass: the server
// says so with x-should-retry, else its status is 408, 409, 429 or 5xx.
func transient(resp *http.Response) bool {
	switch resp.Header.Get("x-should-retry") {
	case "true":
		return true
	case "false":
		return false
	}
	s := resp.StatusCode
	return s == http.StatusRequestTimeout || s == http.StatusConflict || s == http.StatusTooManyRequests || s >= 500
}

// retryAfter reads how long the server asks to wait: retry-after-ms, or
// Retry-After in seconds or as a date; 0 when it asks nothing sensible
// (nothing, or more than a minute, when the backoff is used instead).
func retryAfter(h http.Header) time.Duration {
	var d time.Duration
	if ms, err := strconv.ParseFloat(h.Get("retry-after-ms"), 64); err == nil {
		d = time.Duration(ms * float64(time.Millisecond))
	} else if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil {
			d = time.Duration(s * float64(time.Second))
		} else if t, err := http.ParseTime(v); err == nil {
			d = time.Until(t)
		}
	}
	if d <= 0 || d > time.Minute {
		return 0
	}
	return d
}

func (c *Client) backoff(attempt int) time.Duration {
	base := c.Backoff
	if base <= 0 {
		base = 500 * time.Millisecond
	}
	d := min(base<<attempt, 8*time.Second)
	// Up to a quarter less, so that clients that failed together do not
	// retry together.
	return d - time.Duration(rand.Int64N(int64(d)/4+1))
}

// message returns the error message of an error body: error.message in
// JSON, else the body's text, shortened.
func message(body []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && len(e.Error) > 0 {
		var obj struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(e.Error, &obj) == nil && obj.Message != "" {
			return obj.Message
		}
		var s string
		if json.Unmarshal(e.Error, &s) == nil && s != "" {
			return s
		}
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 500 {
		s = strings.ToValidUTF8(s[:500], "") + "…"
	}
	return s
}

// Status returns the HTTP status of an *APIError in err's chain, or 0.
func Status(err error) int {
	var e *APIError
	if errors.As(err, &e) {
		return e.StatusCode
	}
	return 0
}
