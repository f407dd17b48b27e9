package apikey

import (
	"strings"
	"testing"
)

func TestCheckKey(t *testing.T) {
	for key, ok := range map[string]bool{
		"":                                 false,
		"a":                                false,
		"k3y-1":                            false,
		"0123456789abcde":                  false, // 15 characters
		"aaaaaaaaaaaaaaaa":                 false,
		"abababababababab":                 false,
		"passwordpassword":                 false, // 7 different
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa": false,
		"0123456789abcdef":                 true,
		"adm1n-0123456789ab":               true,
		"9f86d081884c7d659a2feaa0c55ad015": true,
	} {
		err := CheckKey(key)
		if (err == nil) != ok {
			t.Errorf("CheckKey(%q) = %v, want ok %v", key, err, ok)
		}
		if err != nil && len(key) > 4 && strings.Contains(err.Error(), key) {
			t.Errorf("CheckKey(%q): %q shows the key", key, err)
		}
	}
}
