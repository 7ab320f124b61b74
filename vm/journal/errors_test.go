package journal

import (
	"errors"
	"strings"
	"testing"
)

// TestErrorsNameNoFlag: the journal's errors carry their sentinel or type
// and say what to do in the library's terms, never by a command line's
// flag.
func TestErrorsNameNoFlag(t *testing.T) {
	_, err := OpenExisting(t.TempDir(), Options{})
	if !errors.Is(err, ErrNoJournal) || !strings.Contains(err.Error(), "(the runs may be in another state directory)") || strings.Contains(err.Error(), "--") {
		t.Errorf("OpenExisting: %v", err)
	}
	var busy error = &BusyError{Run: "r1", PID: 7}
	var be *BusyError
	if !errors.As(busy, &be) || !strings.Contains(busy.Error(), "resume it with force (the force argument of Resume)") || strings.Contains(busy.Error(), "--") {
		t.Errorf("BusyError: %v", busy)
	}
}
