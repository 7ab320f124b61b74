package journal

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obelisk-plan/obelisk/vm"
)

// TestAppendEvent holds appendEvent to json.Marshal: the same bytes for
// an event without a result, the same JSON with one; every field of
// vm.Event is set in one of the events, so that a field the encoder does
// not know fails the test.
func TestAppendEvent(t *testing.T) {
	odd := "a\"b\\c\n\r\t\b\f\x01\x1f<>&\x7f é \u2028\u2029 \xff\xfe 😀 end"
	full := vm.Event{}
	fill(t, reflect.ValueOf(&full).Elem(), odd)
	events := []vm.Event{
		{Type: vm.StepStarted, Time: time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC), Elapsed: 12345, Step: "s", Tool: "t"},
		{Type: vm.PlanStarted, Time: time.Unix(0, 0).In(time.FixedZone("x", 5*3600+30*60)), Message: odd},
		{Type: vm.StepCompleted, Time: time.Now(), Step: "a/b[2]", Tool: "work", Attempt: 1, Result: map[string]any{"k": []any{int64(1), 2.5, "<x>", nil, true}}, Duration: time.Second},
		{Type: vm.StepFailed, Time: time.Now(), Error: &vm.StepError{Code: "c", Message: odd, Tool: "t", Step: "s"}, Reason: odd},
		{Type: vm.StepCompleted, Time: time.Now(), Result: int64(0)},
		full,
	}
	for _, ev := range events {
		want, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendEvent([]byte("x"), &ev, nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(got[:1]) != "x" {
			t.Fatalf("appendEvent does not append: %s", got)
		}
		got = got[1:]
		if ev.Result == nil && string(got) != string(want) {
			t.Errorf("got  %s\nwant %s", got, want)
		}
		var g, w map[string]any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("decoded (-json.Marshal +appendEvent):\n%s", diff)
		}
	}
	// A year RFC 3339 cannot write is an error, as for json.Marshal.
	if _, err := appendEvent(nil, &vm.Event{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, nil); err == nil {
		t.Error("no error for the year 10000")
	}
}

// fill sets every field of v to a value that is not zero.
func fill(t *testing.T, v reflect.Value, s string) {
	for i := range v.NumField() {
		f := v.Field(i)
		if !f.CanSet() {
			continue // unexported: not encoded
		}
		switch f.Kind() {
		case reflect.String:
			f.SetString(s)
		case reflect.Int, reflect.Int64:
			if f.Type() == reflect.TypeOf(time.Duration(0)) {
				f.SetInt(int64(1500 * time.Millisecond))
			} else {
				f.SetInt(7)
			}
		case reflect.Struct:
			if f.Type() == reflect.TypeOf(time.Time{}) {
				f.Set(reflect.ValueOf(time.Date(2026, 11, 24, 9, 30, 1, 123456789, time.UTC)))
				continue
			}
			fill(t, f, s)
		case reflect.Pointer:
			p := reflect.New(f.Type().Elem())
			fill(t, p.Elem(), s)
			f.Set(p)
		case reflect.Interface, reflect.Map:
			f.Set(reflect.ValueOf(map[string]any{"n": int64(3)}))
		default:
			t.Fatalf("fill: a field of kind %s: teach appendEvent and this test about it", f.Kind())
		}
	}
}
