package toolkit

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// DecodeJSONOrText reads a tool's output that may be JSON: nothing (or
// only spaces) is null, one JSON value is that value, anything else is the
// text without its final line break.
func DecodeJSONOrText(b []byte) any {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err == nil {
		if _, err := dec.Token(); err == io.EOF {
			if v, err := fromNumbers(v); err == nil {
				return v
			}
		}
	}
	return strings.TrimRight(string(b), "\r\n")
}

// Excerpt returns the start of a text on one line, at most n bytes and an
// ellipsis, for error messages that quote a response or a program's
// output.
func Excerpt(b []byte, n int) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// TailWriter keeps the last Max bytes written to it (a program's standard
// error, for the message of its failure) and passes everything on to W
// when W is set. It is safe for concurrent use.
type TailWriter struct {
	W   io.Writer
	Max int

	mu  sync.Mutex
	buf []byte
}

// Write keeps the end of p and writes p to W.
func (t *TailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.W != nil {
		t.W.Write(p)
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.Max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.Max:]...)
	}
	return len(p), nil
}

// Bytes returns a copy of the last bytes written.
func (t *TailWriter) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return bytes.Clone(t.buf)
}
