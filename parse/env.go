package parse

import (
	"fmt"
	"strings"
)

// The environment allowlist. Every way a call sets, exports or removes a
// variable (X=1 cmd, X=1 alone, env, sudo, export, declare -x, typeset,
// local, readonly, set -a, read, for, unset, env -u) is judged by one
// list in the knowledge table, safe_env: a name not on it keeps the
// ceiling whatever the command, because the program that reads it is
// not known to narrowd (RIPGREP_CONFIG_PATH, GIT_*, LD_PRELOAD, …).
//
// An entry of safe_env is
//
//	NAME           any literal value
//	PREFIX*        any name that starts with PREFIX, any literal value
//	NAME=VALUE     exactly VALUE (PAGER=cat); several entries add values
//	NAME=<word>    a plain word: letters, digits and . _ - , : @ + %,
//	               no '/', blank or quote (LANG=C.UTF-8, not a path)
//
// A variable that is not exported (x=1 alone, for x in …, read x,
// declare x, local x) reaches no program unless the name is already in
// the agent's environment. Names with a lower-case letter are the
// applications' own (POSIX XBD 8.1: standard utilities read none), so a
// lower-case name is private to the shell unless it matches an entry of
// exported_lowercase, the lower-case names programs do read (http_proxy).

// envValueKind is what an entry allows as a value.
type envValueKind uint8

const (
	envAnyValue envValueKind = iota
	envExactValue
	envWordValue
)

// envRule is one compiled entry of safe_env.
type envRule struct {
	name   string
	prefix bool
	kind   envValueKind
	value  string
}

// compileEnvRule reads one safe_env entry.
func compileEnvRule(s string) (envRule, error) {
	name, value, hasValue := strings.Cut(s, "=")
	r := envRule{name: name}
	if pre, ok := strings.CutSuffix(name, "*"); ok {
		r.name, r.prefix = pre, true
	}
	if r.name == "" || !isAssignment(r.name+"=") && !(r.prefix && strings.Trim(r.name, "_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") == "") {
		return r, fmt.Errorf("safe_env entry %q: bad variable name", s)
	}
	switch {
	case !hasValue:
	case r.prefix && value != "<word>":
		return r, fmt.Errorf("safe_env entry %q: a prefix takes no exact value", s)
	case value == "<word>":
		r.kind = envWordValue
	case strings.HasPrefix(value, "<"):
		return r, fmt.Errorf("safe_env entry %q: unknown value class", s)
	default:
		r.kind, r.value = envExactValue, value
	}
	return r, nil
}

func (r envRule) matchesName(name string) bool {
	if r.prefix {
		return strings.HasPrefix(name, r.name)
	}
	return name == r.name
}

// plainEnvWord reports a value that names no path and carries no blank
// or quote: a locale, a number, a flag value.
func plainEnvWord(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._-,:@+%", c) >= 0) {
			return false
		}
	}
	return true
}

// envAllowed reports whether a call may export the variable name with
// the value v to the programs it runs, or remove or re-export it when v
// is nil (export NAME, unset NAME, env -u NAME: the value is the one the
// agent's environment, or an assignment judged before, gave it). A value
// only known at run time is never allowed.
func (k *Knowledge) envAllowed(name string, v *Word) bool {
	for _, r := range k.safeEnv {
		if !r.matchesName(name) {
			continue
		}
		if v == nil {
			return true
		}
		if !v.Literal {
			continue
		}
		switch r.kind {
		case envAnyValue:
			return true
		case envExactValue:
			if v.Value == r.value {
				return true
			}
		case envWordValue:
			if plainEnvWord(v.Value) {
				return true
			}
		}
	}
	return false
}

// privateShellVar reports a name the shell keeps to itself when it is
// not exported: lower case letters, digits and '_', starting with a
// letter, and not one of exported_lowercase.
func (k *Knowledge) privateShellVar(name string) bool {
	if !bindable(name) {
		return false
	}
	for _, p := range k.exportedLowercase {
		if pre, suf, ok := strings.Cut(p, "*"); ok {
			if strings.HasPrefix(name, pre) && strings.HasSuffix(name, suf) && len(name) >= len(pre)+len(suf) {
				return false
			}
		} else if name == p {
			return false
		}
	}
	return true
}

// shellVarAllowed reports whether a call may give the variable name the
// value v (nil: unset it, or declare it without a value) when exported
// is false: a private lower-case name takes any value, any other name is
// judged as if exported, since the agent's environment may hold it.
func (k *Knowledge) shellVarAllowed(name string, v *Word, exported bool) bool {
	if !exported && k.privateShellVar(name) {
		return true
	}
	return k.envAllowed(name, v)
}
