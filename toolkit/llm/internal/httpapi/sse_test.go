package httpapi

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func readAll(t *testing.T, body io.Reader, max int) ([]Event, error) {
	t.Helper()
	s := NewSSE(body, max)
	var evs []Event
	for s.Next() {
		e := s.Event()
		evs = append(evs, Event{Type: e.Type, Data: append([]byte{}, e.Data...)})
	}
	return evs, s.Err()
}

func TestSSE(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []Event
	}{
		{"plain", "data: {\"a\":1}\n\ndata: 2\n\n", []Event{{Data: []byte(`{"a":1}`)}, {Data: []byte("2")}}},
		{"named", "event: message_start\ndata: x\n\nevent: ping\ndata: y\n\n", []Event{{"message_start", []byte("x")}, {"ping", []byte("y")}}},
		{"crlf", "event: a\r\ndata: x\r\n\r\n", []Event{{"a", []byte("x")}}},
		{"multi-line data", "data: a\ndata:b\ndata:  c\n\n", []Event{{Data: []byte("a\nb\n c")}}},
		{"comments, id and retry are ignored", ": keep-alive\nid: 7\nretry: 10\ndata: x\n\n", []Event{{Data: []byte("x")}}},
		{"an event without data is skipped and forgets its type", "event: a\n\ndata: x\n\n", []Event{{Data: []byte("x")}}},
		{"blank lines between events", "\n\n\ndata: x\n\n\n\ndata: y\n\n", []Event{{Data: []byte("x")}, {Data: []byte("y")}}},
		{"a field without colon", "data\n\n", []Event{{Data: []byte("")}}},
		{"an event the body cuts is dropped", "data: x\n\ndata: y", []Event{{Data: []byte("x")}}},
		{"an event without its blank line is dropped", "data: x\n\ndata: y\n", []Event{{Data: []byte("x")}}},
		{"unknown fields", "foo: bar\ndata: x\n\n", []Event{{Data: []byte("x")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAll(t, strings.NewReader(tt.body), 0)
			if !errors.Is(err, io.EOF) {
				t.Errorf("err = %v, want io.EOF", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// endless is a body of one line that never ends: a reader that keeps
// everything would run out of memory.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.n += int64(len(p))
	return len(p), nil
}

// TestSSEBounded: a line or an event longer than the bound is an error
// after reading little more than the bound, whatever the body holds
// after it.
func TestSSEBounded(t *testing.T) {
	const max = 1 << 16
	for _, tt := range []struct {
		name string
		body func() (io.Reader, func() int64)
	}{
		{"one endless line", func() (io.Reader, func() int64) {
			e := &endless{}
			return io.MultiReader(strings.NewReader("data: "), e), func() int64 { return e.n }
		}},
		{"endless data lines", func() (io.Reader, func() int64) {
			line := "data: " + strings.Repeat("y", 1000) + "\n"
			r := strings.NewReader(strings.Repeat(line, 10_000))
			return r, func() int64 { return r.Size() - int64(r.Len()) }
		}},
		{"an endless comment", func() (io.Reader, func() int64) {
			e := &endless{}
			return io.MultiReader(strings.NewReader(": "), e), func() int64 { return e.n }
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body, read := tt.body()
			evs, err := readAll(t, body, max)
			if !errors.Is(err, ErrEventTooLarge) {
				t.Fatalf("err = %v, want ErrEventTooLarge", err)
			}
			if len(evs) != 0 {
				t.Errorf("%d events", len(evs))
			}
			if n := read(); n > 4*max+128<<10 {
				t.Errorf("read %d bytes of the body for a bound of %d", n, max)
			}
		})
	}
	// Right at the bound is allowed.
	evs, err := readAll(t, strings.NewReader("data: "+strings.Repeat("z", max)+"\n\n"), max)
	if !errors.Is(err, io.EOF) || len(evs) != 1 || len(evs[0].Data) != max {
		t.Errorf("an event of the bound's size: %d events, err %v", len(evs), err)
	}
}

// TestSSEReadError: an error of the body is the reader's error.
func TestSSEReadError(t *testing.T) {
	boom := errors.New("connection reset")
	evs, err := readAll(t, io.MultiReader(strings.NewReader("data: x\n\ndata: y\n"), &failing{boom}), 0)
	if !errors.Is(err, boom) || len(evs) != 1 {
		t.Errorf("%d events, err %v", len(evs), err)
	}
}

type failing struct{ err error }

func (f *failing) Read([]byte) (int, error) { return 0, f.err }
