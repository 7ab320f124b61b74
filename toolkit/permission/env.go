package permission

import (
	"fmt"
	"slices"
	"strings"
)

// EnvOptions are the operator's environment grants.
type EnvOptions struct {
	// Any grants every variable (bare --allow-env).
	Any bool
	// Allow are the variables of --allow-env; Deny those of --deny-env,
	// which beat them.
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
		flag  string
		names []string
		set   map[string]bool
	}{{"--allow-env", opts.Allow, e.allow}, {"--deny-env", opts.Deny, e.deny}} {
		for _, name := range list.names {
			if err := CheckEnvEntry(name); err != nil {
				return nil, fmt.Errorf("%s: %w", list.flag, err)
			}
			list.set[name] = true
		}
	}
	return e, nil
}

// CheckEnvEntry reports what is wrong with an entry of --allow-env or
// --deny-env: a variable name, of letters, digits and _, not starting
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
// permission-denied error that names those that may not and the flag
// that would grant them.
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
	if len(ungranted) > 0 {
		parts = append(parts, fmt.Sprintf("--allow-env does not grant %s: run again with --allow-env=%s", strings.Join(ungranted, ", "), strings.Join(ungranted, ",")))
	}
	if len(refused) > 0 {
		parts = append(parts, fmt.Sprintf("--deny-env denies %s", strings.Join(refused, ", ")))
	}
	if len(parts) == 0 {
		return nil
	}
	return denied("%s", strings.Join(parts, "; "))
}
