package replay

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obelisk-plan/obelisk/toolkit"
)

type counting struct{ calls int }

func (c *counting) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	c.calls++
	switch name {
	case "flaky":
		if c.calls == 1 {
			return nil, &toolkit.Error{Code: "busy", Message: "try later"}
		}
		return map[string]any{"n": int64(c.calls), "x": 1.5}, nil
	case "broken":
		return nil, errors.New("no route to host")
	}
	return nil, nil
}

func call(t *testing.T, c Caller, step string, attempt int, name string, args map[string]any) (any, error) {
	t.Helper()
	ctx := toolkit.WithCallInfo(context.Background(), toolkit.CallInfo{Step: step, Attempt: attempt})
	return c.Call(ctx, name, args)
}

func TestRecordReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "calls.jsonl")
	tools := &counting{}
	rec, err := NewRecorder(tools, path)
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"city": "Paris", "n": int64(2)}
	var want []any
	for i, name := range []string{"flaky", "flaky", "broken", "void"} {
		v, err := call(t, rec, "s-"+name, i+1, name, args)
		want = append(want, v, errText(err))
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if got := strings.Count(string(b), "\n"); got != 4 {
		t.Fatalf("%d lines recorded:\n%s", got, b)
	}

	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []any
	for i, name := range []string{"flaky", "flaky", "broken", "void"} {
		v, err := call(t, p, "s-"+name, i+1, name, map[string]any{"n": int64(2), "city": "Paris"})
		got = append(got, v, errText(err))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replayed (-recorded +replayed):\n%s", diff)
	}
	if tools.calls != 4 {
		t.Errorf("the replay called a tool: %d calls", tools.calls)
	}
	// A call it has no answer for fails, and is not retried.
	_, err = call(t, p, "s", 1, "flaky", map[string]any{"city": "Lyon"})
	var re *toolkit.Error
	if !errors.As(err, &re) || re.Code != CodeNotRecorded || !re.NotRetryable || !strings.Contains(re.Message, `"city":"Lyon"`) {
		t.Errorf("unrecorded call: %v", err)
	}
	if len(p.Unused()) != 0 {
		t.Errorf("unused: %v", p.Unused())
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	var re *toolkit.Error
	if errors.As(err, &re) {
		return re.Code + ": " + re.Message
	}
	return toolkit.CodeToolError + ": " + err.Error() // as the interpreter reads it

}
