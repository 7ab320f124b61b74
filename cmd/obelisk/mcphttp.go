package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/obelisk-plan/obelisk/mcpserver"
)

// envMCPToken gives the token HTTP clients must send; without it the
// server makes one and prints it.
const envMCPToken = "OBELISK_MCP_TOKEN"

// checkListenAddr refuses an address that is not a loopback address,
// unless remote clients are allowed.
func checkListenAddr(addr string, remote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: give HOST:PORT, such as 127.0.0.1:8765 (port 0 picks one)", addr)
	}
	if remote {
		return nil
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%q is not a loopback address: other machines could run plans with this server's tools. Listen on 127.0.0.1 or [::1], or give --allow-remote-clients to let them", addr)
}

// serveHTTP serves MCP over HTTP at ADDR/mcp until ctx ends.
func serveHTTP(ctx context.Context, e *env, srv *mcpserver.Server, addr string) int {
	token := e.getenv(envMCPToken)
	made := token == ""
	if made {
		b := make([]byte, 24)
		rand.Read(b)
		token = hex.EncodeToString(b)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		e.Errorf("--http: %v", err)
		return exitUsage
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.Handler(mcpserver.HTTPOptions{Token: token}))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	url := "http://" + ln.Addr().String() + "/mcp"
	if made {
		fmt.Fprintf(e.Stderr, "obelisk mcp-server: serving MCP at %s\nclients send the header: Authorization: Bearer %s\n", url, token)
	} else {
		fmt.Fprintf(e.Stderr, "obelisk mcp-server: serving MCP at %s (clients send the token of %s)\n", url, envMCPToken)
	}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		e.Errorf("%v", err)
		return exitUsage
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(shutdown)
	return exitOK
}
