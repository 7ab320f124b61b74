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
// A refusal is a *Denial, which wraps a *toolkit.Error with code
// toolkit.CodePermissionDenied that may not be retried: its Grant names
// the setting that refuses (NetOptions.Allow, EnvOptions.Deny, …) and
// Allow what that setting would have to allow. Its message names the host
// or variable and the setting by its Go name, such as
// "(permission.NetOptions.Allow)", never a command line's flag.
package permission

import (
	"fmt"

	"github.com/obelisk-plan/obelisk/toolkit"
)

// A Grant names the setting a refusal is about, by its Go name; the
// names are stable, and a program may map them to its own words (the
// obelisk command maps them to its flags).
type Grant string

// The grants a refusal names.
const (
	// NetAllow is NetOptions.Allow (or AnyPublic): the host is not
	// allowed, or is a special address no entry names.
	NetAllow Grant = "permission.NetOptions.Allow"
	// NetDeny is NetOptions.Deny: an entry of it refuses the host.
	NetDeny Grant = "permission.NetOptions.Deny"
	// EnvAllow is EnvOptions.Allow (or Any): the variables are not
	// granted.
	EnvAllow Grant = "permission.EnvOptions.Allow"
	// EnvDeny is EnvOptions.Deny: an entry of it refuses the variables.
	EnvDeny Grant = "permission.EnvOptions.Deny"
	// RedirectGrant is ClientOptions.Redirects: a redirect to another
	// origin is not followed.
	RedirectGrant Grant = "permission.ClientOptions.Redirects"
)

// Denial is a refusal of the grants. errors.As finds it, and the
// *toolkit.Error of code permission-denied it wraps, in the errors of
// Net and Env.
type Denial struct {
	// Grant is the setting that refuses; when an environment check
	// refuses for both reasons, EnvAllow.
	Grant Grant
	// Allow are the entries the allow setting would need: a host or
	// host:port (NetAllow), variable names (EnvAllow); none for a
	// refusal by a deny setting, which no allow overrides.
	Allow []string
	err   *toolkit.Error
}

// Error returns the message.
func (d *Denial) Error() string { return d.err.Message }

// Unwrap returns the *toolkit.Error of code permission-denied.
func (d *Denial) Unwrap() error { return d.err }

// denied returns the error of a refusal by grant, which allow would lift.
func denied(grant Grant, allow []string, format string, args ...any) *Denial {
	return &Denial{Grant: grant, Allow: allow,
		err: &toolkit.Error{Code: toolkit.CodePermissionDenied, Message: fmt.Sprintf(format, args...), NotRetryable: true}}
}
