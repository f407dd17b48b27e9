package postgres_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/postgres"
)

// The batched claim statement (ClaimSQL), run on its own as a tool such as
// pgbench runs it, claims for the store: keys it claims are held, for the
// token it offered, when the store is asked for them.
func TestClaimBatchStatementClaimsForTheStore(t *testing.T) {
	s, pool := newStore(t)
	_, stmt, err := postgres.ClaimSQL(postgres.DefaultTable)
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"b:2", "b:1", "b:3"}
	tokens := []string{"t2", "t1", "t3"}
	fps := [][]byte{[]byte("f2"), []byte("f1"), []byte("f3")}
	leases := []int64{30e6, 30e6, 30e6}
	rows, err := pool.Query(t.Context(), stmt, keys, tokens, fps, leases)
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string]string{}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		owners[vals[0].(string)] = vals[1].(string)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"b:1": "t1", "b:2": "t2", "b:3": "t3"}; fmt.Sprint(owners) != fmt.Sprint(want) {
		t.Fatalf("statement returned owners %v, want %v", owners, want)
	}
	for i, k := range keys {
		c, err := s.Claim(t.Context(), k, fps[i], time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if c.Status != stores.InProgress || string(c.Record.Fingerprint) != string(fps[i]) {
			t.Errorf("Claim(%q) after the statement = %v with fingerprint %q, want in progress with %q",
				k, c.Status, c.Record.Fingerprint, fps[i])
		}
	}
}
