package mcp

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK decodes a tool's schemas into maps, which forget the order of
// their properties; a plan's signature lists a tool's parameters in that
// order, as a tools file with the same JSON does. So the answers to
// tools/list are read as they arrive, and each tool's schemas kept as the
// server wrote them.

// rawSchemas are a tool's schemas as the server sent them.
type rawSchemas struct {
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
}

// listedSchemas collects the schemas of the tools a server lists, by tool
// name. It is safe for concurrent use.
type listedSchemas struct {
	mu      sync.Mutex
	pending map[jsonrpc.ID]bool // the IDs of tools/list requests sent
	tools   map[string]rawSchemas
}

// sent notes a tools/list request.
func (l *listedSchemas) sent(id jsonrpc.ID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending == nil {
		l.pending = map[jsonrpc.ID]bool{}
	}
	l.pending[id] = true
}

// received reads the answer to a tools/list request, if resp is one.
func (l *listedSchemas) received(resp *jsonrpc.Response) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.pending[resp.ID] {
		return
	}
	delete(l.pending, resp.ID)
	var page struct {
		Tools []struct {
			Name string `json:"name"`
			rawSchemas
		} `json:"tools"`
	}
	if resp.Error != nil || json.Unmarshal(resp.Result, &page) != nil {
		return // the SDK reports what is wrong with it
	}
	if l.tools == nil {
		l.tools = map[string]rawSchemas{}
	}
	for _, t := range page.Tools {
		l.tools[t.Name] = t.rawSchemas
	}
}

// of returns the schemas of a tool as they were sent; empty when they
// were not seen.
func (l *listedSchemas) of(name string) rawSchemas {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tools[name]
}

// schemaTransport is a transport whose connection hands the answers to
// tools/list to a listedSchemas.
type schemaTransport struct {
	sdk.Transport
	listed *listedSchemas
}

// Connect connects the underlying transport.
func (t schemaTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return schemaConn{c, t.listed}, nil
}

type schemaConn struct {
	sdk.Connection
	listed *listedSchemas
}

// Write notes the IDs of tools/list requests.
func (c schemaConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/list" && req.ID.IsValid() {
		c.listed.sent(req.ID)
	}
	return c.Connection.Write(ctx, msg)
}

// Read reads the schemas out of the answers to tools/list.
func (c schemaConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil {
		c.listed.received(resp)
	}
	return msg, err
}
