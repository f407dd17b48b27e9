package redisstore

import (
	"regexp"
	"testing"
)

// TestScriptsUseOnlyKeys1 guards Redis Cluster support: a script may touch
// only the one key it is given, or the cluster could not run it on a single
// node.
func TestScriptsUseOnlyKeys1(t *testing.T) {
	keyRef := regexp.MustCompile(`KEYS\s*\[\s*([^\]]*?)\s*\]`)
	for name, src := range map[string]string{
		"prelude":  prelude,
		"claim":    claimLua,
		"complete": completeLua,
		"release":  releaseLua,
		"extend":   extendLua,
	} {
		refs := keyRef.FindAllStringSubmatch(src, -1)
		if name != "prelude" && len(refs) == 0 {
			t.Errorf("%s script names no key", name)
		}
		for _, ref := range refs {
			if ref[1] != "1" {
				t.Errorf("%s script uses %s; only KEYS[1] may be used", name, ref[0])
			}
		}
	}
}
