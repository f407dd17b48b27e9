package main

import (
	"io"
	"strings"
	"testing"
)

// A command other than serve, and a fault switch with ENV=production, are
// refused before anything starts.
func TestRefuses(t *testing.T) {
	for _, c := range []struct {
		args, environ []string
		want          string
	}{
		{[]string{"migrate"}, nil, `unknown command "migrate"`},
		{[]string{"serve", "now"}, nil, `unknown command "serve now"`},
		{nil, []string{"ENV=production", "CHAOS_FAIL_AFTER=0.3"}, "CHAOS_FAIL_AFTER is a test aid and is refused with ENV=production"},
		{[]string{"serve"}, []string{"CHAOS_FAIL_BEFORE=2"}, "CHAOS_FAIL_BEFORE=2 must be a probability"},
	} {
		if err := run(t.Context(), c.args, c.environ, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v: %v, want %q", c.args, c.environ, err, c.want)
		}
	}
}
