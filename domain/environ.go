package domain

import (
	"context"
	"strings"
)

// Getenv returns the value of the variable key in Environ, "" when it is
// not set: a domain's own setting. A variable set more than once has its
// last value, as in os.Environ's form.
func (d Deps) Getenv(key string) string { return lookup(d.Environ, key) }

// Getenv returns the value of the variable key in Environ, "" when it is
// not set: a command's own setting.
func (e CommandEnv) Getenv(key string) string { return lookup(e.Environ, key) }

// WithEnviron returns d whose Open is given environ as [Deps.Environ]:
// how the service hands its environment to the domain it runs. A domain
// that reads no setting of its own ignores it.
func (d Domain) WithEnviron(environ []string) Domain {
	open := d.Open
	if open == nil {
		return d // Validate reports it
	}
	environ = append([]string(nil), environ...)
	d.Open = func(ctx context.Context, deps Deps) (*Parts, error) {
		deps.Environ = environ
		return open(ctx, deps)
	}
	return d
}

// lookup is the value of key in environ, the last one when it is set more
// than once; "" when it is not set.
func lookup(environ []string, key string) string {
	for i := len(environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(environ[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}
