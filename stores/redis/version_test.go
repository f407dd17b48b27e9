package redisstore

import (
	"errors"
	"strings"
	"testing"
)

// TestAtLeast checks the version comparison CheckVersion makes.
func TestAtLeast(t *testing.T) {
	for _, tc := range []struct {
		version string
		want    bool
	}{
		{"7.0.15", true}, {"7.0", true}, {"7.2.4", true}, {"8.0.1", true}, {"10.0.0", true},
		{"6.2.14", false}, {"6.0.0", false}, {"5.0.7", false},
		{"unreadable", true}, {"", true},
	} {
		if got := atLeast(tc.version, MinVersion); got != tc.want {
			t.Errorf("atLeast(%q, %q) = %v, want %v", tc.version, MinVersion, got, tc.want)
		}
	}
}

// TestVersionError checks that the INFO reply of an older server is
// refused, naming the server and its version, and one that does not say
// its version refuses nothing.
func TestVersionError(t *testing.T) {
	err := versionError("# Server\r\nredis_version:6.2.14\r\nredis_git_sha1:00000000\r\n", "old:6379")
	if !errors.Is(err, ErrTooOld) || !strings.Contains(err.Error(), "old:6379 runs 6.2.14") {
		t.Errorf("the INFO of a 6.2 server gives %v, want ErrTooOld naming the node and its version", err)
	}
	if err := versionError("# Server\r\nredis_mode:standalone\r\n", ""); err != nil {
		t.Errorf("an INFO without a version gives %v, want nil", err)
	}
}
