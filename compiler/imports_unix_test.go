//go:build unix

package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestImportFIFO: a FIFO named like a tools file is refused without
// waiting for a writer. So that a checker that waits cannot hang the
// test, a writer stands ready: with it, a waiting checker reads an empty
// file and fails the test instead.
func TestImportFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		// Opening for writing waits until a reader opens the FIFO.
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
	}()
	_, got := checkImport(t, dir, "pipe.json")
	// Let the writer go if the checker never opened the FIFO.
	if f, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
		<-wrote
		f.Close()
	}
	<-wrote
	if !strings.Contains(got, "pipe.json is not a regular file (it is a named pipe) [import-error]") {
		t.Errorf("import of a FIFO: got:\n%s", got)
	}
}
