package testenv

import "strings"

// Setting is the value of name in environ (KEY=value pairs, os.Environ's
// form): the last one's where name repeats, as the service reads it; ""
// when unset.
func Setting(environ []string, name string) string {
	for i := len(environ) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(environ[i], name+"="); ok {
			return v
		}
	}
	return ""
}
