package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Every message a client sends is screened before the SDK reads it. A
// message the SDK would refuse (one that is not JSON, nests deeper than it
// reads, is not a JSON-RPC message, is a batch, or is too large) ends its
// session: over stdio, the server's process and every run in flight with
// it. Screened, such a message gets a JSON-RPC error as its answer, and
// the session goes on.

// The bounds of a message: a line over stdio, a request's body over HTTP,
// the SDK's own.
const (
	maxLine = sdk.DefaultMaxLineLength
	maxBody = sdk.DefaultMaxRequestBodyBytes
)

// rpcError is the answer to a message the server refuses.
type rpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   jsonrpc.Error   `json:"error"`
}

// encode returns the answer as a line of JSON.
func (e *rpcError) encode() []byte {
	b, err := json.Marshal(e)
	if err != nil { // it cannot fail: the ID is JSON, the rest strings and numbers
		b = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"the message is refused"}}`)
	}
	return append(b, '\n')
}

// refuse returns the error that answers a message the SDK would not read,
// or nil for one it reads. msg has no spaces around it.
func refuse(msg []byte) *rpcError {
	fail := func(code int64, format string, args ...any) *rpcError {
		return &rpcError{JSONRPC: "2.0", ID: requestID(msg), Error: jsonrpc.Error{Code: code, Message: fmt.Sprintf(format, args...)}}
	}
	if err := json.Unmarshal(msg, new(json.RawMessage)); err != nil {
		return fail(jsonrpc.CodeParseError, "the message is not JSON: %v", err)
	}
	if msg[0] == '[' {
		return fail(jsonrpc.CodeInvalidRequest, "a batch of messages: send each message on its own")
	}
	if _, err := jsonrpc.DecodeMessage(msg); err != nil {
		return fail(jsonrpc.CodeInvalidRequest, "the message is not a JSON-RPC 2.0 message: %v", err)
	}
	return nil
}

// tooLong is the answer to a message longer than limit bytes, whose ID
// is not read.
func tooLong(limit int64) *rpcError {
	return &rpcError{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("the message is longer than %d bytes", limit)}}
}

// requestID returns the ID of the request msg is, as JSON, when it can be
// read, and null otherwise.
func requestID(msg []byte) json.RawMessage {
	var head struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(msg, &head) != nil || head.ID == nil {
		return json.RawMessage("null")
	}
	id, err := jsonrpc.MakeID(head.ID)
	if err != nil {
		return json.RawMessage("null")
	}
	b, err := json.Marshal(id.Raw())
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

// RunStdio serves one client over newline-delimited JSON-RPC, as MCP's
// stdio transport: in and out are the client's (stdin and stdout for a
// server the client starts). A message the SDK would refuse gets a
// JSON-RPC error, and the session goes on; it ends when in does or ctx
// ends. Runs still executing go on until Close.
func (s *Server) RunStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	return s.Run(ctx, &lineTransport{in: in, out: out})
}

// lineTransport is the stdio transport of the SDK, behind a screen.
type lineTransport struct {
	in  io.Reader
	out io.Writer
}

// Connect starts screening the client's messages.
func (t *lineTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	pr, pw := io.Pipe()
	out := &lineWriter{w: t.out}
	go screenLines(t.in, pw, out, maxLine)
	// The lines are bounded here: the SDK's bound, which counts the bytes
	// its decoder reads ahead, would refuse some that are not too long.
	return (&sdk.IOTransport{Reader: pr, Writer: out, MaxLineLength: -1}).Connect(ctx)
}

// lineWriter writes whole lines to the client, one at a time: the SDK's
// messages, each in one Write, and the screen's answers.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// Close leaves the client's stream open: its owner closes it.
func (w *lineWriter) Close() error { return nil }

// screenLines reads the client's messages, one a line, and passes those
// the SDK reads to it (to), answering the others on out itself, until in
// ends or the SDK stops reading.
func screenLines(in io.Reader, to *io.PipeWriter, out io.Writer, limit int) {
	br := bufio.NewReader(in)
	for {
		line, long, err := readLine(br, limit)
		var answer *rpcError
		switch msg := bytes.TrimSpace(line); {
		case long:
			answer = tooLong(int64(limit))
		case len(msg) == 0:
		default:
			if answer = refuse(msg); answer == nil {
				if _, werr := to.Write(append(msg, '\n')); werr != nil {
					return // the session has ended
				}
			}
		}
		if answer != nil {
			if _, werr := out.Write(answer.encode()); werr != nil {
				to.CloseWithError(werr)
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			to.CloseWithError(err)
			return
		}
	}
}

// readLine reads a line, without its newline; one longer than limit is
// read to its end and reported long, without its bytes.
func readLine(br *bufio.Reader, limit int) (line []byte, long bool, err error) {
	for {
		frag, err := br.ReadSlice('\n')
		frag = bytes.TrimSuffix(frag, []byte("\n"))
		if !long && len(line)+len(frag) > limit {
			long, line = true, nil
		}
		if !long {
			line = append(line, frag...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, long, err
		}
	}
}

// screenHTTP screens the messages POSTed to h: one the SDK would refuse is
// answered with a JSON-RPC error (status 400, or 413 for a body over
// maxBody) before h sees it.
func screenHTTP(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		var answer *rpcError
		status := http.StatusBadRequest
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			status = http.StatusRequestEntityTooLarge
			answer = tooLong(tooLarge.Limit)
		case err != nil:
			http.Error(w, "reading the request: "+err.Error(), http.StatusBadRequest)
			return
		default:
			answer = refuse(bytes.TrimSpace(body))
		}
		if answer != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			w.Write(answer.encode())
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	})
}
