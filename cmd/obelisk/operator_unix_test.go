//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestImportFIFORefused: a plan that imports a FIFO is refused without
// waiting for a writer. A writer stands ready so that a command that
// waits cannot hang the test: it would read an empty file instead.
func TestImportFIFORefused(t *testing.T) {
	dir := writeFiles(t, map[string]string{"p.plan": "import \"pipe.json\"\n\necho(value: 1) -> †state.x\n"})
	fifo := filepath.Join(dir, "pipe.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	for _, args := range [][]string{{"check"}, {"run", "--no-journal"}, {"run", "--no-journal", "--mode", "eager"}} {
		wrote := make(chan struct{})
		go func() {
			defer close(wrote)
			if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				f.Close()
			}
		}()
		wantRefused(t, "", append(args, filepath.Join(dir, "p.plan")), `cannot import "pipe.json": pipe.json is not a regular file (it is a named pipe) [import-error]`)
		if f, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			<-wrote
			f.Close()
		}
		<-wrote
	}
}
