package main

import (
	"bytes"
	"io"
	"testing"
)

// TestStatusWriter: a log line written under the progress line clears it
// first, and the next status update draws it again.
func TestStatusWriter(t *testing.T) {
	var buf bytes.Buffer
	s := &statusWriter{w: &buf}
	s.Status("steps 1/3 done")
	io.WriteString(s, "a log line\n")
	s.Status("steps 2/3 done")
	s.Status("")
	want := "steps 1/3 done\r\033[Ka log line\nsteps 2/3 done\r\033[K"
	if got := buf.String(); got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
}
