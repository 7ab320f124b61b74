package durable

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"sync"
	"testing/fstest"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/vm"
	"github.com/obelisk-plan/obelisk/vm/journal"
)

// The names of the texts a streamed run records: its plan, and the files
// its plan imports (the prefix and the import's name).
const (
	planText   = "plan"
	importText = "import:"
)

// ExecuteStream runs a run whose plan arrives as a stream (see Plan), in
// eager mode: each step runs as soon as it is complete and checked,
// without waiting for the rest (see vm.RunStream). A journaled run
// records every piece of the text before the parser sees it, and every
// file the plan imports when it is read, so that no step runs whose text
// the journal does not hold.
//
// A resumed run is given no text (nil): it reads again the text its
// journal holds, restores the steps that finished, and runs the others.
// When the stream had not ended (its process died while it was read),
// the plan ends where its recorded text does: a statement cut short is
// rejected.
//
// It returns the diagnostics of the statements the run rejected.
func (r *Run) ExecuteStream(ctx context.Context, text io.Reader, o ExecOptions) (*vm.Result, lang.Diagnostics, error) {
	if !r.settings.Stream {
		return nil, nil, errors.New("the run's plan does not arrive as a stream: run it with Execute, or a goal's with Pursue")
	}
	opts, err := r.options(o)
	if err != nil {
		return nil, nil, err
	}
	cfg := r.plan.Check
	if cfg.Tools == nil && cfg.Imports == nil {
		cfg, _ = r.plan.Source.Config()
		cfg.Imports = compiler.ImportDir(r.plan.Source.ImportRoot())
		cfg.Limits = r.settings.Limits
	}
	var in io.Reader
	switch {
	case text != nil && r.jr != nil:
		in = &journaled{r: text, jr: r.jr}
	case text != nil:
		in = text
	case r.jr != nil:
		recorded, _, _, _, err := r.jr.Text(planText)
		if err != nil {
			return nil, nil, r.failed(err)
		}
		in = bytes.NewReader(recorded)
	default:
		return nil, nil, errors.New("no text to run")
	}
	r.text = &lockedBuffer{}
	in = io.TeeReader(in, r.text)
	if r.jr != nil && cfg.Imports != nil {
		cfg.Imports = &importsFS{fsys: cfg.Imports, jr: r.jr, read: map[string]bool{}}
	}
	opts.Check = cfg
	sp := lang.NewStreamParser(r.plan.Source.Name, in)
	ctx, stop := r.watch(ctx)
	res, rejected, err := vm.RunStream(ctx, sp, r.plan.Input, opts)
	res, err = r.finish(res, err, stop())
	return res, rejected, err
}

// Text returns the text of a streamed run's plan as far as ExecuteStream
// read it: for the diagnostics of the statements it rejected.
func (r *Run) Text() []byte {
	if r.text == nil {
		return nil
	}
	return r.text.bytes()
}

// lockedBuffer is a buffer that the reader of a stream writes while
// another goroutine may read it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// failed records a run that could not start as failed, and returns why.
func (r *Run) failed(err error) error {
	if r.jr != nil {
		return errors.Join(err, r.jr.Finish(&vm.Result{Status: vm.RunFailed, Err: err}))
	}
	return err
}

// journaled records what is read from r in the journal before it gives
// it to its reader, and the end of the text once r ends. When the journal
// cannot be written, the text ends there with the journal's error.
type journaled struct {
	r  io.Reader
	jr *journal.Run
}

func (j *journaled) Read(p []byte) (int, error) {
	n, err := j.r.Read(p)
	if n > 0 {
		if jerr := j.jr.AppendText(planText, p[:n]); jerr != nil {
			return 0, jerr
		}
	}
	if errors.Is(err, io.EOF) {
		if jerr := j.jr.EndText(planText, nil); jerr != nil {
			return n, jerr
		}
	}
	return n, err
}

// importsFS serves a streamed plan's imports: as the run's earlier
// processes read them, or else from fsys, recording them as they are
// read. The checker reads an import each time a statement is checked: it
// is recorded once.
type importsFS struct {
	fsys fs.FS
	jr   *journal.Run
	mu   sync.Mutex
	read map[string]bool
}

func (f *importsFS) Open(name string) (fs.File, error) {
	text, _, _, found, err := f.jr.Text(importText + name)
	if err != nil {
		return nil, err
	}
	if !found {
		// By the checker's rules (a regular file, not too large), so
		// that nothing is read or recorded that it would refuse.
		if _, text, err = compiler.ReadImport(f.fsys, name); err != nil {
			// The checker says what is wrong with it, as it would.
			return f.fsys.Open(name)
		}
		f.mu.Lock()
		first := !f.read[name]
		f.read[name] = true
		f.mu.Unlock()
		if first {
			if err := f.jr.AppendText(importText+name, text); err != nil {
				return nil, err
			}
			if err := f.jr.EndText(importText+name, nil); err != nil {
				return nil, err
			}
		}
	}
	return fstest.MapFS{name: {Data: text, Mode: 0o444}}.Open(name)
}
