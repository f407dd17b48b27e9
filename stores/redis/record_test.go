package redisstore

import (
	"errors"
	"testing"
	"time"

	"github.com/onceflow/onceflow/stores"
)

// TestPackedClaimReadsBack checks that the record a Claim's native command
// writes reads back as that Claim's own (the command resent) and as
// another caller's in-progress record, byte for byte: fingerprints that
// hold the separator or NUL included.
func TestPackedClaimReadsBack(t *testing.T) {
	created := time.UnixMicro(1_700_000_000_123_456)
	until := created.Add(30 * time.Second)
	for _, fp := range []string{"", "plain", "with|bars|", "\x00\xff\x00", string(make([]byte, 300))} {
		r, err := unpack(string(packClaim("tok", []byte(fp), created, until)))
		if err != nil {
			t.Fatalf("unpack of fingerprint %q: %v", fp, err)
		}
		own, ok := r.claim("tok")
		if !ok || own.Status != stores.Acquired || own.Token != "tok" || !own.LeaseUntil.Equal(until) || !own.Record.CreatedAt.Equal(created) {
			t.Errorf("own record %+v, %v; want acquired until %v", own, ok, until)
		}
		other, ok := r.claim("other")
		if !ok || other.Status != stores.InProgress || string(other.Record.Fingerprint) != fp || !other.LeaseUntil.Equal(until) {
			t.Errorf("another's view %+v, %v; want in progress with fingerprint %q", other, ok, fp)
		}
	}
}

// TestUnpackReadsWhatTheScriptsWrite checks the reading of the records
// only the scripts write: completed, released, and one whose key outlives
// it, which only the claim script may judge.
func TestUnpackReadsWhatTheScriptsWrite(t *testing.T) {
	done, err := unpack("1ck|tok|10|20|30|||2|fpresult")
	if err != nil {
		t.Fatal(err)
	}
	c, ok := done.claim("other")
	want := stores.Record{Fingerprint: []byte("fp"), Result: []byte("result"),
		CreatedAt: time.UnixMicro(10), CompletedAt: time.UnixMicro(20), ExpiresAt: time.UnixMicro(30)}
	if !ok || c.Status != stores.Completed || string(c.Record.Result) != "result" || string(c.Record.Fingerprint) != "fp" ||
		!c.Record.CreatedAt.Equal(want.CreatedAt) || !c.Record.CompletedAt.Equal(want.CompletedAt) || !c.Record.ExpiresAt.Equal(want.ExpiresAt) {
		t.Errorf("completed record read as %+v, %v; want %+v", c, ok, want)
	}
	for _, v := range []string{"1ro||||||a1:99|0|", "1po|tok|10|20||e1|a1:99|2|fp"} {
		r, err := unpack(v)
		if err != nil {
			t.Fatalf("unpack(%q): %v", v, err)
		}
		if c, ok := r.claim("tok"); ok {
			t.Errorf("claim of %q read as %+v; want it left to the claim script", v, c)
		}
	}
}

// TestUnpackRefusesWhatIsNoRecord checks that a value no Store wrote is
// refused, not read as a record.
func TestUnpackRefusesWhatIsNoRecord(t *testing.T) {
	for _, v := range []string{"", "not a record", "1pk", "2pk|tok|1|2||||0|", "1xk|tok|1|2||||0|", "1pz|tok|1|2||||0|",
		"1pk|tok|1|2|||", "1pk|tok|x|2||||0|", "1pk|tok|1|2||||9|fp", "1pk|tok|1|2||||-1|fp"} {
		if _, err := unpack(v); !errors.Is(err, errUnreadable) {
			t.Errorf("unpack(%q) = %v, want errUnreadable", v, err)
		}
	}
}
