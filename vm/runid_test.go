package vm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/obelisk-plan/obelisk/toolkit"
)

// TestIdempotencyKeyPerRun: two runs of the same plan with no run ID (as
// a run without a journal) send different idempotency keys to a server
// that records them, so a server that acts once per key acts on both;
// the retries of a call within one run keep its key.
func TestIdempotencyKeyPerRun(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
	}))
	defer srv.Close()
	reg := toolkit.NewRegistry()
	def := toolkit.Definition{Name: "pay", InputSchema: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"]}`),
		Annotations: toolkit.Annotations{Idempotent: true}}
	err := reg.Register(def, toolkit.ToolFunc(func(ctx context.Context, args map[string]any) (any, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/pay", strings.NewReader(`{"amount": 5}`))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Idempotency-Key", toolkit.IdempotencyKey(ctx))
		resp, err := srv.Client().Do(req)
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		if info, _ := toolkit.CallInfoFrom(ctx); info.Attempt == 1 {
			return nil, errors.New("the answer was lost") // retried with the same key
		}
		return "paid", nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	prog := compile(t, "tool pay(amount: int) -> any idempotent\npay: pay(amount: 5) -> †state.paid\n  retry 1\n")
	for range 2 {
		res, err := Run(context.Background(), prog, nil, opts(reg, nil))
		if err != nil || res.Status != RunCompleted {
			t.Fatalf("run: %v %v", err, res.Err)
		}
	}
	if len(keys) != 4 {
		t.Fatalf("the server got %d requests (keys %q); want 4", len(keys), keys)
	}
	form := regexp.MustCompile(`^[0-9a-f]{16}/pay$`)
	for _, k := range keys {
		if !form.MatchString(k) {
			t.Errorf("key %q; want RUN/pay with a random run ID", k)
		}
	}
	if keys[0] != keys[1] || keys[2] != keys[3] {
		t.Errorf("keys %q: a retry changed the key", keys)
	}
	if keys[0] == keys[2] {
		t.Errorf("keys %q: two runs sent the same key", keys)
	}
}
