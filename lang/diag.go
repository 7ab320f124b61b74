package lang

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Severity says how serious a Diagnostic is.
type Severity int

// The severities, most serious first.
const (
	SeverityError Severity = iota
	SeverityWarning
	SeverityInfo
)

// String returns "error", "warning" or "info".
func (s Severity) String() string {
	switch s {
	case SeverityError:
		return "error"
	case SeverityWarning:
		return "warning"
	default:
		return "info"
	}
}

// MarshalText encodes the severity as its name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText decodes a severity name.
func (s *Severity) UnmarshalText(b []byte) error {
	switch string(b) {
	case "error":
		*s = SeverityError
	case "warning":
		*s = SeverityWarning
	case "info":
		*s = SeverityInfo
	default:
		return fmt.Errorf("unknown severity %q (want error, warning or info)", b)
	}
	return nil
}

// A Diagnostic is one problem found in a plan: what is wrong, where, and when
// possible how to fix it.
type Diagnostic struct {
	Severity Severity
	Code     Code
	// Message is terse and lowercase, without a final period, like a Go
	// compiler error: "unknown tool \"issueRefnd\"".
	Message string
	// File names the source the Span points into.
	File string
	Span Span
	// Related points at other places that explain the problem, such as the
	// other writer of a conflicting slot or each step of a cycle.
	Related []Related
	// Fix is a suggested change, or nil.
	Fix *Fix
}

// Related is a secondary location of a Diagnostic.
type Related struct {
	File    string
	Span    Span
	Message string
}

// Fix is a suggested repair: a description and the text edits that make it.
type Fix struct {
	Message string
	Edits   []Edit
}

// Edit replaces the source text in Span of File with NewText.
type Edit struct {
	File    string
	Span    Span
	NewText string
}

// Error formats the diagnostic on one line as "file:line:col: severity: message [code]".
func (d *Diagnostic) Error() string {
	var b strings.Builder
	if d.File != "" {
		b.WriteString(d.File)
		b.WriteByte(':')
	}
	if d.Span.IsValid() {
		b.WriteString(d.Span.Start.String())
		b.WriteByte(':')
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	fmt.Fprintf(&b, "%s: %s", d.Severity, d.Message)
	if d.Code != "" {
		fmt.Fprintf(&b, " [%s]", d.Code)
	}
	return b.String()
}

// Diagnostics is a list of diagnostics. It implements error so that a list
// with errors can be returned as one; use Err to get a nil error for a list
// without errors.
type Diagnostics []*Diagnostic

// maxErrorLines is the most diagnostics Diagnostics.Error lists.
const maxErrorLines = 100

// Error lists the diagnostics one per line, the errors first, at most a
// hundred of them and then how many more there are.
func (ds Diagnostics) Error() string {
	var b strings.Builder
	n := 0
	for _, errors := range []bool{true, false} {
		for _, d := range ds {
			if (d.Severity == SeverityError) != errors {
				continue
			}
			if n == maxErrorLines {
				fmt.Fprintf(&b, "\nand %d more", len(ds)-n)
				return b.String()
			}
			if n > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(d.Error())
			n++
		}
	}
	return b.String()
}

// HasErrors reports whether any diagnostic has error severity.
func (ds Diagnostics) HasErrors() bool {
	for _, d := range ds {
		if d.Severity == SeverityError {
			return true
		}
	}
	return false
}

// Count returns the number of diagnostics of the given severity.
func (ds Diagnostics) Count(s Severity) int {
	n := 0
	for _, d := range ds {
		if d.Severity == s {
			n++
		}
	}
	return n
}

// Err returns ds as an error if it holds at least one error, and nil
// otherwise.
func (ds Diagnostics) Err() error {
	if ds.HasErrors() {
		return ds
	}
	return nil
}

// Sort orders the diagnostics by file, position, severity, code and message,
// and removes exact duplicates, so that output is deterministic.
func (ds *Diagnostics) Sort() {
	slices.SortStableFunc(*ds, compareDiagnostics)
	*ds = slices.CompactFunc(*ds, func(a, b *Diagnostic) bool { return compareDiagnostics(a, b) == 0 })
}

func compareDiagnostics(a, b *Diagnostic) int {
	return cmp.Or(
		cmp.Compare(a.File, b.File),
		cmp.Compare(a.Span.Start.Offset, b.Span.Start.Offset),
		cmp.Compare(a.Span.End.Offset, b.Span.End.Offset),
		cmp.Compare(a.Severity, b.Severity),
		cmp.Compare(a.Code, b.Code),
		cmp.Compare(a.Message, b.Message),
	)
}
