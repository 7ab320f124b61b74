package permission

import (
	"fmt"
	"slices"
	"strings"
)

// EnvOptions are the operator's environment grants.
type EnvOptions struct {
	// Any grants every variable.
	Any bool
	// Allow are the variables granted; Deny those refused, which beat
	// them.
	Allow, Deny []string
}

// Env says which environment variables a tools file's ${NAME} may read.
// A nil *Env grants none.
type Env struct {
	any         bool
	allow, deny map[string]bool
}

// NewEnv returns the policy of the grants. It reports the first entry that
// is not a variable name.
func NewEnv(opts EnvOptions) (*Env, error) {
	e := &Env{any: opts.Any, allow: map[string]bool{}, deny: map[string]bool{}}
	for _, list := range []struct {
		grant Grant
		names []string
		set   map[string]bool
	}{{EnvAllow, opts.Allow, e.allow}, {EnvDeny, opts.Deny, e.deny}} {
		for _, name := range list.names {
			if err := CheckEnvEntry(name); err != nil {
				return nil, fmt.Errorf("%s: %w", list.grant, err)
			}
			list.set[name] = true
		}
	}
	return e, nil
}

// CheckEnvEntry reports what is wrong with an entry of EnvOptions.Allow or
// EnvOptions.Deny: a variable name, of letters, digits and _, not starting
// with a digit.
func CheckEnvEntry(name string) error {
	if name == "" {
		return fmt.Errorf("an empty entry: give variable names such as API_TOKEN")
	}
	for i, c := range name {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return fmt.Errorf("%q is not an environment variable name (letters, digits and _, not starting with a digit)", name)
		}
	}
	return nil
}

// Granted reports whether a variable may be read.
func (e *Env) Granted(name string) bool {
	return e != nil && !e.deny[name] && (e.any || e.allow[name])
}

// Check reports whether every variable of names may be read: nil, or a
// *Denial that names those that may not and the grant that refuses them.
func (e *Env) Check(names []string) error {
	var refused, ungranted []string
	for _, n := range names {
		switch {
		case e != nil && e.deny[n]:
			refused = append(refused, n)
		case !e.Granted(n):
			ungranted = append(ungranted, n)
		}
	}
	slices.Sort(refused)
	slices.Sort(ungranted)
	var parts []string
	grant := EnvDeny
	if len(ungranted) > 0 {
		grant = EnvAllow
		parts = append(parts, fmt.Sprintf("the environment grant lacks %s: allow %s (%s)", strings.Join(ungranted, ", "), strings.Join(ungranted, ","), EnvAllow))
	}
	if len(refused) > 0 {
		parts = append(parts, fmt.Sprintf("the environment's deny list denies %s (%s)", strings.Join(refused, ", "), EnvDeny))
	}
	if len(parts) == 0 {
		return nil
	}
	return denied(grant, ungranted, "%s", strings.Join(parts, "; "))
}
