package permission

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A Resolver looks up the addresses of a host name; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// NetOptions are the operator's network grants.
type NetOptions struct {
	// AnyPublic allows every host whose addresses are public.
	AnyPublic bool
	// Allow are the hosts allowed; Deny those refused, which beat them.
	// See CheckNetEntry for their forms.
	Allow, Deny []string
	// Resolver looks up host names (default net.DefaultResolver).
	Resolver Resolver
}

// Net decides which hosts tools may reach, and makes HTTP clients that
// reach only those. A nil *Net reaches none. It is safe for concurrent
// use.
type Net struct {
	anyPublic   bool
	allow, deny []rule
	resolver    Resolver
	// dial connects to an address already checked, an IP and a port.
	dial func(ctx context.Context, network, address string) (net.Conn, error)
	// transport is shared by the clients of this Net, so that they share
	// its connections.
	transport http.RoundTripper
}

// rule is one entry of an allow or deny list.
type rule struct {
	text string // as the operator gave it
	// name is a host name in lower case without a trailing dot; suffix
	// says it is the domain of a wildcard (*.name). When name is empty,
	// the rule is prefix: an address (a prefix of all its bits) or a
	// CIDR block.
	name   string
	suffix bool
	prefix netip.Prefix
	port   uint16 // 0: any port
}

// NewNet returns the policy of the grants. It reports the first entry that
// is not a host, host:port, IP address, CIDR block or *.domain.
func NewNet(opts NetOptions) (*Net, error) {
	n := &Net{anyPublic: opts.AnyPublic, resolver: opts.Resolver}
	if n.resolver == nil {
		n.resolver = net.DefaultResolver
	}
	for _, list := range []struct {
		grant   Grant
		entries []string
		rules   *[]rule
	}{{NetAllow, opts.Allow, &n.allow}, {NetDeny, opts.Deny, &n.deny}} {
		for _, e := range list.entries {
			r, err := parseRule(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", list.grant, err)
			}
			*list.rules = append(*list.rules, r)
		}
	}
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	n.dial = d.DialContext
	n.transport = &http.Transport{
		Proxy:                 nil, // a guarded client takes no proxy from the environment
		DialContext:           n.dialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return n, nil
}

// CheckNetEntry reports what is wrong with an entry of NetOptions.Allow or
// NetOptions.Deny. An entry is a host name (example.com: any port), a host and
// a port (example.com:8443), an IP address (10.0.0.7, ::1, [::1]:8080,
// 10.0.0.7:80), a CIDR block (10.0.0.0/8, fd00::/8: any port) or a
// wildcard (*.example.com: every name under example.com, any port).
func CheckNetEntry(s string) error {
	_, err := parseRule(s)
	return err
}

func parseRule(s string) (rule, error) {
	r := rule{text: s}
	switch {
	case s == "":
		return r, errors.New("an empty entry: give a host, host:port, IP address or CIDR block")
	case strings.Contains(s, "://") || strings.ContainsAny(s, "?#@ "):
		return r, fmt.Errorf("%q is not a host: give example.com, example.com:443, an IP address or a CIDR block", s)
	case s == "*":
		return r, errors.New(`"*": leave the list out (permission.NetOptions.AnyPublic) to allow any public host`)
	case strings.Contains(s, "/"):
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return r, fmt.Errorf("%q is not a CIDR block such as 10.0.0.0/8 or fd00::/8", s)
		}
		r.prefix = canonicalPrefix(p)
		return r, nil
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		if ap.Port() == 0 {
			return r, fmt.Errorf("%q: port 0 is not a port", s)
		}
		r.prefix, r.port = single(ap.Addr()), ap.Port()
		return r, nil
	}
	inner := s
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		inner = s[1 : len(s)-1]
	}
	if a, err := netip.ParseAddr(inner); err == nil {
		r.prefix = single(a)
		return r, nil
	}
	host := s
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		p, err := strconv.ParseUint(s[i+1:], 10, 16)
		if err != nil || p == 0 {
			return r, fmt.Errorf("%q: %q is not a port (1 to 65535)", s, s[i+1:])
		}
		host, r.port = s[:i], uint16(p)
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if d, ok := strings.CutPrefix(host, "*."); ok {
		host, r.suffix = d, true
	}
	if !hostName(host) {
		return r, fmt.Errorf("%q is neither a host name, an IP address nor a CIDR block", s)
	}
	r.name = host
	return r, nil
}

// hostName reports whether s is a DNS host name: labels of letters,
// digits, - and _, the last not all digits (which would be a malformed
// address).
func hostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return false
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	last := labels[len(labels)-1]
	return strings.Trim(last, "0123456789") != ""
}

func single(a netip.Addr) netip.Prefix {
	a = a.WithZone("").Unmap()
	return netip.PrefixFrom(a, a.BitLen())
}

// canonicalPrefix masks a prefix and writes one of IPv4-mapped IPv6
// addresses as IPv4, the form addresses are compared in.
func canonicalPrefix(p netip.Prefix) netip.Prefix {
	p = p.Masked()
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p
}

// matches reports whether the rule covers a host (its name, or an address
// written as the host, ip set) on a port.
func (r *rule) matches(host string, ip netip.Addr, port uint16) bool {
	if r.port != 0 && r.port != port {
		return false
	}
	switch {
	case r.name == "":
		return ip.IsValid() && r.prefix.Contains(ip)
	case ip.IsValid():
		return false
	case r.suffix:
		return strings.HasSuffix(host, "."+r.name)
	}
	return host == r.name
}

// names reports whether the rule names a host or an address explicitly,
// which a special address needs: the host's own name (not a wildcard), or
// an address or block holding addr.
func (r *rule) names(host string, addr netip.Addr, port uint16) bool {
	if r.port != 0 && r.port != port {
		return false
	}
	if r.name == "" {
		return r.prefix.Contains(addr)
	}
	return !r.suffix && host == r.name
}

// Allowed reports whether a request to u may be sent: nil, or a *Denial
// that names the host and the grant that would allow it. It looks at the URL's host as written; an address a host name
// resolves to is checked when the connection is dialed.
func (n *Net) Allowed(u *url.URL) error {
	host, port := hostPort(u)
	return n.checkHost(host, port)
}

// hostPort returns the host of a URL as it is compared (lower case,
// without a trailing dot) and its port, the scheme's when it has none.
func hostPort(u *url.URL) (string, uint16) {
	host := normalHost(u.Hostname())
	p, err := strconv.ParseUint(u.Port(), 10, 16)
	if err != nil {
		switch strings.ToLower(u.Scheme) {
		case "https":
			p = 443
		default:
			p = 80
		}
	}
	return host, uint16(p)
}

func normalHost(h string) string {
	if _, err := netip.ParseAddr(h); err == nil {
		return h
	}
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// literal returns the address a host is written as, in the form it is
// compared in, or the zero Addr for a host name.
func literal(host string) netip.Addr {
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.WithZone("").Unmap()
}

// Off reports whether the grants allow no host at all.
func (n *Net) Off() bool {
	return n == nil || !n.anyPublic && len(n.allow) == 0
}

// checkHost checks a host as written, and an address written as the host.
func (n *Net) checkHost(host string, port uint16) error {
	ip := literal(host)
	where, fix := display(host, port), suggest(host, port)
	if n.Off() {
		return denied(NetAllow, []string{fix}, "%s: the network is off: allow %s to reach it (%s)", where, fix, NetAllow)
	}
	for _, r := range n.deny {
		if r.matches(host, ip, port) {
			return denied(NetDeny, nil, "%s is denied by the network's deny list (%s: %s)", where, NetDeny, r.text)
		}
	}
	if !n.anyPublic && !slices.ContainsFunc(n.allow, func(r rule) bool { return r.matches(host, ip, port) }) {
		return denied(NetAllow, []string{fix}, "%s is not among the allowed hosts: allow %s (%s)", where, fix, NetAllow)
	}
	if ip.IsValid() {
		if kind := special(ip); kind != "" && !n.named(host, ip, port) {
			return denied(NetAllow, []string{fix}, "%s is %s address, reached only when named: allow %s (%s)", where, kind, fix, NetAllow)
		}
	}
	return nil
}

// checkAddr checks an address a host resolved to, before it is dialed.
func (n *Net) checkAddr(host string, addr netip.Addr, port uint16) error {
	addr = addr.WithZone("").Unmap()
	where := display(host, port)
	for _, r := range n.deny {
		if r.name == "" && r.matches(host, addr, port) {
			return denied(NetDeny, nil, "%s resolves to %s, which the network's deny list denies (%s: %s)", where, addr, NetDeny, r.text)
		}
	}
	if kind := special(addr); kind != "" && !n.named(host, addr, port) {
		fix := suggest(host, port)
		return denied(NetAllow, []string{fix}, "%s resolves to %s, %s address, reached only when named: allow %s (%s)", where, addr, kind, fix, NetAllow)
	}
	return nil
}

// named reports whether an allow entry names the host or the address.
func (n *Net) named(host string, addr netip.Addr, port uint16) bool {
	for _, r := range n.allow {
		if r.names(host, addr, port) {
			return true
		}
	}
	return false
}

func display(host string, port uint16) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// suggest returns the entry of NetOptions.Allow that allows a host: the host
// alone for the usual ports, with the port otherwise.
func suggest(host string, port uint16) string {
	if port == 80 || port == 443 {
		return host
	}
	return display(host, port)
}

// dialContext connects to a host only at an address the grants allow,
// and dials that address itself, so that the name is resolved once.
func (n *Net) dialContext(ctx context.Context, network, address string) (net.Conn, error) {
	h, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	p, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("%s: %q is not a port", address, portText)
	}
	host, port := normalHost(h), uint16(p)
	if err := n.checkHost(host, port); err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		lookup := "ip"
		switch network {
		case "tcp4":
			lookup = "ip4"
		case "tcp6":
			lookup = "ip6"
		}
		if addrs, err = n.resolver.LookupNetIP(ctx, lookup, host); err != nil {
			return nil, err
		}
	}
	var refused, failed error
	for _, a := range addrs {
		if err := n.checkAddr(host, a, port); err != nil {
			if refused == nil {
				refused = err
			}
			continue
		}
		conn, err := n.dial(ctx, network, netip.AddrPortFrom(a.Unmap(), port).String())
		if err == nil {
			return conn, nil
		}
		failed = err
		if ctx.Err() != nil {
			break
		}
	}
	if failed != nil {
		return nil, failed
	}
	if refused != nil {
		return nil, refused
	}
	return nil, fmt.Errorf("%s has no address", host)
}
