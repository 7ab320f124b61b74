// Package permission holds the operator's grants of network and
// environment access to the tools a plan calls. A plan is untrusted data:
// it may name hosts and variables, but only the operator lets tools reach
// them. The model is Deno's: nothing is allowed by default, a grant is
// explicit and may be narrowed to a list, and a deny beats an allow.
//
// A Net says which hosts tools may reach; the obelisk command builds it
// from --allow-net and --deny-net:
//
//   - no allow at all: the network is off;
//   - AnyPublic (bare --allow-net): any host whose addresses are public;
//   - Allow entries: host (any port), host:port, an IP address (with or
//     without a port; IPv6 in brackets with one), a CIDR block, or
//     *.example.com (every name under example.com, not example.com
//     itself);
//   - Deny entries, of the same forms, beat every allow.
//
// Loopback, private (RFC 1918, IPv6 unique local), shared (100.64/10),
// link-local (169.254/16, where cloud metadata services answer),
// unspecified, multicast, documentation, benchmarking and reserved
// addresses, and IPv6 forms that embed such an IPv4 address (IPv4-mapped,
// NAT64, 6to4), are refused unless an allow entry names them: an entry
// that is the host's own name (not a wildcard), that address, or a CIDR
// block holding it. The check is made on the resolved address when the
// connection is dialed, and the connection goes to the checked address
// itself, so a name that resolves elsewhere on a second look (DNS
// rebinding) cannot get round it. Clients from Net.Client take no proxy
// from the environment.
//
// An Env says which environment variables a tools file's ${NAME} may read;
// the obelisk command builds it from --allow-env (bare: all) and
// --deny-env, which beats it.
//
// A refusal is a *toolkit.Error with code toolkit.CodePermissionDenied that
// may not be retried; its message names the host or variable and the flag
// that would allow it.
package permission

import (
	"fmt"

	"github.com/obelisk-plan/obelisk/toolkit"
)

// denied returns the error of a refusal.
func denied(format string, args ...any) *toolkit.Error {
	return &toolkit.Error{Code: toolkit.CodePermissionDenied, Message: fmt.Sprintf(format, args...), NotRetryable: true}
}
