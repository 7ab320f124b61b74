package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
)

// jsonStatements reads a plan in the JSON form while the answer streams
// in, and gives the plan text it stands for, a statement as soon as the
// JSON of its call is complete, each ended by ';' so that eager mode can
// run it without waiting for the next. A call that does not read as a
// call is left out, with a diagnostic; malformed JSON ends the plan
// there. It reads the calls of a solution ({"calls": […], "output": …},
// with its other keys) or of a bare array.
type jsonStatements struct {
	pr   *io.PipeReader
	done chan struct{}
	mu   sync.Mutex
	// diags are the problems of the calls left out.
	diags lang.Diagnostics
}

// newJSONStatements reads the answer r, whose name names the file of its
// diagnostics. tools, when known, are the signatures of a schema's calls:
// their optional arguments given as null are left out.
func newJSONStatements(name string, r io.Reader, tools map[string]*compiler.Tool) *jsonStatements {
	pr, pw := io.Pipe()
	j := &jsonStatements{pr: pr, done: make(chan struct{})}
	go func() {
		defer close(j.done)
		pw.CloseWithError(j.write(name, r, pw, tools))
	}()
	return j
}

// Read reads the plan text.
func (j *jsonStatements) Read(p []byte) (int, error) { return j.pr.Read(p) }

// finish stops the reading, once the answer's stream is closed, and
// returns the diagnostics of the calls left out.
func (j *jsonStatements) finish() lang.Diagnostics {
	j.pr.Close()
	<-j.done
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.diags
}

func (j *jsonStatements) problem(name, format string, args ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.diags = append(j.diags, &lang.Diagnostic{Severity: lang.SeverityError, Code: lang.ParseError, File: name, Message: fmt.Sprintf(format, args...)})
}

// write writes the plan text of the JSON read from r to w. An answer
// that fails or is cut short (llm.ErrTruncated) while its JSON is being
// read ends the plan text with its error: the call being read is not
// complete. After the JSON, the rest of the answer is read to its end,
// where the provider counts its tokens.
func (j *jsonStatements) write(name string, r io.Reader, w io.Writer, tools map[string]*compiler.Tool) error {
	src := &errReader{r: r}
	dec := json.NewDecoder(src)
	statement := func(doc string) error {
		f, diags := lang.ParseJSON(name, []byte(dropNulls(doc, tools)))
		if diags.HasErrors() {
			for _, d := range diags {
				if d.Severity == lang.SeverityError {
					j.problem(name, "%s, in %.200s", d.Message, doc)
				}
			}
			return nil
		}
		for _, it := range f.Items {
			if _, err := io.WriteString(w, strings.TrimRight(lang.FormatItem(it), "\n")+";\n"); err != nil {
				return err
			}
		}
		return nil
	}
	calls := func() error {
		for dec.More() {
			var call json.RawMessage
			if err := dec.Decode(&call); err != nil {
				return err
			}
			if err := statement(`{"calls": [` + string(call) + `], "output": null}`); err != nil {
				return err
			}
		}
		_, err := dec.Token() // ]
		return err
	}
	err := func() error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('['):
			return calls()
		case json.Delim('{'):
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := k.(string)
				if key == "calls" {
					if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
						return fmt.Errorf(`"calls" is an array of calls`)
					}
					if err := calls(); err != nil {
						return err
					}
					continue
				}
				var v json.RawMessage
				if err := dec.Decode(&v); err != nil {
					return err
				}
				kj, _ := json.Marshal(key)
				if err := statement(`{"calls": [], ` + string(kj) + `: ` + string(v) + `}`); err != nil {
					return err
				}
			}
			_, err := dec.Token() // }
			return err
		}
		return fmt.Errorf("a plan in the JSON form is an object or an array of calls")
	}()
	if src.err != nil && !errors.Is(src.err, io.EOF) {
		return src.err
	}
	if err != nil && err != io.ErrClosedPipe {
		j.problem(name, "the JSON of the answer: %v; what came before it ran", err)
	}
	if err != io.ErrClosedPipe {
		_, _ = io.Copy(io.Discard, r) // a cut after the whole JSON cuts nothing of the plan
	}
	return nil
}

// errReader keeps the error that ended its reader.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}
