package exactlyonce

import (
	"errors"
	"testing"
)

// rows is a wsql.Rows of n rows whose reading then ends in err.
type rows struct {
	n   int
	err error
}

func (r *rows) Next() bool {
	if r.n == 0 {
		return false
	}
	r.n--
	return true
}

func (*rows) Scan(...any) error { return nil }
func (*rows) Close() error      { return nil }
func (r *rows) Err() error      { return r.err }

// A read that ends in an error yields one more row, whose Scan returns the
// error, so that watermill-sql sees it instead of an empty table.
func TestErrRowsReportsTheErrorThatEndedTheRead(t *testing.T) {
	errRace := errors.New("could not serialize access due to concurrent update")
	r := &errRows{Rows: &rows{n: 1, err: errRace}}
	if !r.Next() || r.Scan() != nil {
		t.Fatal("the row before the error was not read as usual")
	}
	if !r.Next() {
		t.Fatal("the error ended the rows silently")
	}
	if err := r.Scan(); !errors.Is(err, errRace) {
		t.Fatalf("Scan after the error = %v, want %v", err, errRace)
	}
	if r.Next() {
		t.Fatal("rows go on after the error")
	}

	clean := &errRows{Rows: &rows{n: 1}}
	if !clean.Next() || clean.Next() {
		t.Fatal("rows that ended without an error did not end after their last row")
	}
}
