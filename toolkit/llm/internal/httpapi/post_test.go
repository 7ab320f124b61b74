package httpapi

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// answers serves the given handlers in turn, one per request, and counts
// the requests.
func answers(t *testing.T, hs ...http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if i >= len(hs) {
			http.Error(w, "too many requests to the test server", http.StatusTeapot)
			return
		}
		hs[i](w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func status(code int, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

func ok(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	io.WriteString(w, "data: done\n\n")
}

func post(t *testing.T, c *Client, url string) (string, error) {
	t.Helper()
	resp, err := c.Post(context.Background(), url, map[string]any{"q": 1})
	if err != nil {
		return "", err
	}
	defer resp.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestPostRetries(t *testing.T) {
	for _, tt := range []struct {
		name     string
		retries  int
		hs       []http.HandlerFunc
		requests int32
		err      string
	}{
		{"429 then ok", 0, []http.HandlerFunc{status(429, `{"error":{"message":"slow down"}}`), ok}, 2, ""},
		{"500, 503 then ok", 0, []http.HandlerFunc{status(500, "oops"), status(503, "busy"), ok}, 3, ""},
		{"408 and 409 are transient", 0, []http.HandlerFunc{status(408, ""), status(409, ""), ok}, 3, ""},
		{"the default is two retries", 0, []http.HandlerFunc{status(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
			status(529, ""), status(529, `{"error":{"message":"still overloaded"}}`), ok}, 3, "529 status code 529: still overloaded"},
		{"retries as set", 3, []http.HandlerFunc{status(502, ""), status(502, ""), status(502, ""), ok}, 4, ""},
		{"never", -1, []http.HandlerFunc{status(429, `{"error":{"message":"slow down"}}`), ok}, 1, "429 Too Many Requests: slow down"},
		{"400 is not retried", 0, []http.HandlerFunc{status(400, `{"error":{"message":"bad field"}}`), ok}, 1, "400 Bad Request: bad field"},
		{"401 is not retried", 0, []http.HandlerFunc{status(401, `{"error":{"message":"invalid x-api-key"}}`), ok}, 1, "invalid x-api-key"},
		{"x-should-retry: false wins", 0, []http.HandlerFunc{status(503, "no", "x-should-retry", "false"), ok}, 1, "503 Service Unavailable: no"},
		{"x-should-retry: true wins", 0, []http.HandlerFunc{status(400, "", "x-should-retry", "true"), ok}, 2, ""},
		{"retry-after-ms", 0, []http.HandlerFunc{status(429, "", "retry-after-ms", "5"), ok}, 2, ""},
		{"Retry-After in seconds", 0, []http.HandlerFunc{status(429, "", "Retry-After", "0.01"), ok}, 2, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, n := answers(t, tt.hs...)
			body, err := post(t, &Client{Retries: tt.retries, Backoff: time.Millisecond}, srv.URL)
			if got := n.Load(); got != tt.requests {
				t.Errorf("%d requests, want %d", got, tt.requests)
			}
			if tt.err == "" {
				if err != nil || body != "data: done\n\n" {
					t.Errorf("body %q, err %v", body, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("err = %v, want %q", err, tt.err)
			}
		})
	}
}

// TestPostRequest: the body is the JSON of the value, with the client's
// headers.
func TestPostRequest(t *testing.T) {
	var got *http.Request
	var body string
	srv, _ := answers(t, func(w http.ResponseWriter, r *http.Request) {
		got = r
		b, _ := io.ReadAll(r.Body)
		body = string(b)
	})
	h := http.Header{}
	h.Set("X-Api-Key", "secret")
	if _, err := post(t, &Client{Header: h}, srv.URL); err != nil {
		t.Fatal(err)
	}
	if got.Method != "POST" || got.Header.Get("X-Api-Key") != "secret" || got.Header.Get("Content-Type") != "application/json" || body != `{"q":1}` {
		t.Errorf("%s %v %q", got.Method, got.Header, body)
	}
}

// TestPostConnectionRetried: a connection that fails before an answer is
// retried; then the error names it.
func TestPostConnectionRetried(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	defer l.Close()
	_, err = post(t, &Client{Backoff: time.Millisecond}, "http://"+l.Addr().String())
	if err == nil || n.Load() != 3 {
		t.Errorf("%d connections, err %v; want 3 and an error", n.Load(), err)
	}
}

// TestPostErrorBodyBounded: an endless error body is read up to a bound.
func TestPostErrorBodyBounded(t *testing.T) {
	srv, _ := answers(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400)
		chunk := strings.Repeat("e", 1<<10)
		for range 10_000 { // 10 MB, unless the client hangs up
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	})
	_, err := post(t, &Client{}, srv.URL)
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || len(apiErr.Message) > 1000 {
		t.Errorf("err = %.200v", err)
	}
}

// TestPostTimeout: the timeout bounds an attempt, the reading of its
// body included, and a timed-out attempt is retried.
func TestPostTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	stream := func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("data: x\n\n"))
		w.(http.Flusher).Flush()
		<-release
	}
	// Later attempts stream, in case a loaded machine is slower than the
	// timeout to answer one.
	srv, n := answers(t, func(w http.ResponseWriter, r *http.Request) { <-release }, stream, stream, stream)
	resp, err := (&Client{Timeout: 500 * time.Millisecond, Retries: 3, Backoff: time.Millisecond}).Post(context.Background(), srv.URL, 1)
	if err != nil {
		t.Fatalf("the later attempts: %v", err)
	}
	defer resp.Close()
	_, err = io.ReadAll(resp.Body)
	if !errors.Is(err, context.DeadlineExceeded) || n.Load() < 2 {
		t.Errorf("%d requests; reading the body: %v, want the deadline", n.Load(), err)
	}
}

// roundTrip is a transport of one function.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestPostCancelledWhileWaiting: a context done while waiting to retry
// ends the wait, and the error says what was waited for.
func TestPostCancelledWhileWaiting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n atomic.Int32
	hc := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		n.Add(1)
		time.AfterFunc(20*time.Millisecond, cancel)
		return &http.Response{StatusCode: 429, Status: "429 Too Many Requests", Request: r,
			Header: http.Header{"Retry-After-Ms": {"50000"}}, Body: io.NopCloser(strings.NewReader(""))}, nil
	})}
	start := time.Now()
	_, err := (&Client{HTTP: hc, Backoff: time.Hour}).Post(ctx, "http://model.invalid/v1", 1)
	if err == nil || !strings.Contains(err.Error(), "429") || n.Load() != 1 {
		t.Errorf("%d requests, err %v", n.Load(), err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("waited %v for a cancelled context", d)
	}
}

func TestRetryAfter(t *testing.T) {
	for _, tt := range []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{"Retry-After-Ms": {"1500"}}, 1500 * time.Millisecond},
		{http.Header{"Retry-After": {"2"}}, 2 * time.Second},
		{http.Header{"Retry-After": {"3600"}}, 0},
		{http.Header{"Retry-After": {"-1"}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{}, 0},
	} {
		if got := retryAfter(tt.h); got != tt.want {
			t.Errorf("retryAfter(%v) = %v, want %v", tt.h, got, tt.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	c := &Client{}
	for attempt, want := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second} {
		if got := c.backoff(attempt); got > want || got < want*3/4 {
			t.Errorf("backoff(%d) = %v, want within [%v, %v]", attempt, got, want*3/4, want)
		}
	}
}
