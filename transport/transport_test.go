package transport

import (
	"strings"
	"testing"
)

// The zero Config is the in-process transport, which has no broker to
// reach; every other kind is opened by its own package, whose errors name
// it; an unknown kind is refused with the kinds there are.
func TestNewPicksByKind(t *testing.T) {
	if Kinds[0] != GoChannel {
		t.Errorf("Kinds = %v, want the default, %s, first", Kinds, GoChannel)
	}
	tr, err := New(t.Context(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Readiness() != nil {
		t.Error("the zero Config has a broker to reach, want the in-process transport")
	}
	if err := tr.Close(); err != nil {
		t.Error(err)
	}
	for _, kind := range Kinds[1:] {
		if _, err := New(t.Context(), Config{Kind: kind}); err == nil || !strings.HasPrefix(err.Error(), kind+": ") {
			t.Errorf("New of an empty %s Config: %v, want the %s package's error", kind, err, kind)
		}
	}
	_, err = New(t.Context(), Config{Kind: "pigeon"})
	if err == nil || !strings.Contains(err.Error(), `unknown transport "pigeon": use one of `+strings.Join(Kinds, ", ")) {
		t.Errorf("New of an unknown kind: %v", err)
	}
}
