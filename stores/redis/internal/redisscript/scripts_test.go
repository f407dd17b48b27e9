package redisscript

import (
	"regexp"
	"testing"
)

var keyRef = regexp.MustCompile(`KEYS\s*\[\s*([^\]]*?)\s*\]`)

// TestScriptsUseOnlyKeys1 guards Redis Cluster support: a script that may
// run on a Cluster touches only the one key it is given, or the cluster
// could not run it on a single node.
func TestScriptsUseOnlyKeys1(t *testing.T) {
	for name, src := range map[string]string{
		"claim":    ClaimOne,
		"complete": CompleteOne,
		"release":  Release,
		"extend":   Extend,
		"lookup":   Lookup,
		"remove":   Remove,
	} {
		refs := keyRef.FindAllStringSubmatch(src, -1)
		if len(refs) == 0 {
			t.Errorf("%s script names no key", name)
		}
		for _, ref := range refs {
			if ref[1] != "1" {
				t.Errorf("%s script uses %s; only KEYS[1] may be used", name, ref[0])
			}
		}
	}
}

// TestFunctionsTakeTheirKey guards the batch scripts: the functions that
// one-key and batch scripts share touch only the key they are called with,
// so that a batch's calls each act on their own key.
func TestFunctionsTakeTheirKey(t *testing.T) {
	for name, src := range map[string]string{"prelude": prelude, "claim": claimLua, "complete": completeLua} {
		if ref := keyRef.FindString(src); ref != "" {
			t.Errorf("%s uses %s; it must act on the key it is called with", name, ref)
		}
	}
}
