package permission

import "net/netip"

// specialBlocks are the address blocks a host is reached at only when an
// allow entry names it, with what each is (for messages); a block inside
// another comes first. Most are in the IANA special-purpose address
// registries; none is a public host.
var specialBlocks = []struct {
	prefix netip.Prefix
	kind   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified"}, // "this network"; 0.0.0.0 reaches the machine itself
	{netip.MustParsePrefix("10.0.0.0/8"), "a private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (carrier-grade NAT)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local"}, // cloud metadata services answer at 169.254.169.254
	{netip.MustParsePrefix("172.16.0.0/12"), "a private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "a reserved"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation"},
	{netip.MustParsePrefix("192.88.99.0/24"), "a reserved"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved"}, // 255.255.255.255 included
	{netip.MustParsePrefix("::/128"), "an unspecified"},
	{netip.MustParsePrefix("::1/128"), "a loopback"},
	{netip.MustParsePrefix("::/96"), "a reserved"}, // IPv4-compatible, deprecated
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a private"},
	{netip.MustParsePrefix("100::/64"), "a reserved"}, // discard
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation"},
	{netip.MustParsePrefix("2001::/23"), "a reserved"}, // protocol assignments: Teredo, benchmarking, …
	{netip.MustParsePrefix("3fff::/20"), "a documentation"},
	{netip.MustParsePrefix("fc00::/7"), "a private"}, // unique local
	{netip.MustParsePrefix("fe80::/10"), "a link-local"},
	{netip.MustParsePrefix("fec0::/10"), "a private"}, // site-local, deprecated
	{netip.MustParsePrefix("ff00::/8"), "a multicast"},
}

var (
	nat64   = netip.MustParsePrefix("64:ff9b::/96")
	sixToF4 = netip.MustParsePrefix("2002::/16")
)

// special says what kind of address a is, with an article ("a loopback"),
// when it is one reached only when named; "" for a public address. An
// IPv6 address that carries an IPv4 address (IPv4-mapped, NAT64, 6to4) is
// what that address is.
func special(a netip.Addr) string {
	a = a.WithZone("").Unmap()
	if a.Is6() {
		b := a.As16()
		var v4 netip.Addr
		switch {
		case nat64.Contains(a):
			v4 = netip.AddrFrom4([4]byte(b[12:16]))
		case sixToF4.Contains(a):
			v4 = netip.AddrFrom4([4]byte(b[2:6]))
		}
		if v4.IsValid() {
			if k := special(v4); k != "" {
				return k
			}
		}
	}
	for _, s := range specialBlocks {
		if s.prefix.Contains(a) {
			return s.kind
		}
	}
	return ""
}
