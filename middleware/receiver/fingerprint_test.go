package receiver

import "testing"

// Fingerprints are compared in constant time, with bytes.Equal's answers:
// equal bytes match, anything else (another length included) does not.
func TestSameFingerprint(t *testing.T) {
	fp := []byte("0123456789abcdef0123456789abcdef")
	for _, tc := range []struct {
		a, b []byte
		want bool
	}{
		{fp, append([]byte(nil), fp...), true},
		{fp, append(append([]byte(nil), fp[:31]...), 'g'), false},
		{fp, fp[:31], false},
		{nil, []byte{}, true},
		{nil, fp, false},
	} {
		if got := sameFingerprint(tc.a, tc.b); got != tc.want {
			t.Errorf("sameFingerprint(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
