package redisstore

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/onceflow/onceflow/stores"
)

// A record is one packed Redis string: see package internal/redisscript
// for the layout, which the scripts read and write too.

// packClaim is the record a Claim's native command creates: in progress
// for token, claimed at created until leaseUntil (the client's clock as it
// sends the command), flag k, as the key expires with the lease.
func packClaim(token stores.Token, fingerprint []byte, created, leaseUntil time.Time) []byte {
	b := make([]byte, 0, 64+len(token)+len(fingerprint))
	b = append(b, "1pk|"...)
	b = append(b, token...)
	b = append(b, '|')
	b = strconv.AppendInt(b, created.UnixMicro(), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, leaseUntil.UnixMicro(), 10)
	b = append(b, "||||"...)
	b = strconv.AppendInt(b, int64(len(fingerprint)), 10)
	b = append(b, '|')
	return append(b, fingerprint...)
}

// errUnreadable is what a value that is not a packed record gives.
var errUnreadable = errors.New("unreadable record")

// packed is a record as read from its packed value; the strings are
// slices of it.
type packed struct {
	state       byte // 'p', 'c' or 'r'
	keyed       bool // flag k: the key expires with the record
	token       string
	created     int64
	t1, t2      int64
	fingerprint string
	result      string
}

// unpack reads a packed record, leaving out the extend id and the
// remembered Releases, which only the scripts use.
func unpack(v string) (packed, error) {
	var r packed
	if len(v) < 4 || v[0] != '1' || v[3] != '|' || !strings.ContainsRune("pcr", rune(v[1])) || (v[2] != 'k' && v[2] != 'o') {
		return r, errUnreadable
	}
	r.state, r.keyed = v[1], v[2] == 'k'
	rest := v[4:]
	var f [7]string
	for i := range f {
		var ok bool
		if f[i], rest, ok = strings.Cut(rest, "|"); !ok {
			return r, errUnreadable
		}
	}
	r.token = f[0]
	var err error
	for i, n := range []*int64{&r.created, &r.t1, &r.t2} {
		if f[i+1] == "" {
			continue
		}
		if *n, err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
			return r, errUnreadable
		}
	}
	n, err := strconv.Atoi(f[6])
	if err != nil || n < 0 || n > len(rest) {
		return r, errUnreadable
	}
	r.fingerprint, r.result = rest[:n], rest[n:]
	return r, nil
}

// claim is what a Claim that offered token reads from r, and false when
// only the claim script can tell: when the key outlives the record, for a
// Release it remembers, or the record is released.
func (r packed) claim(token stores.Token) (stores.Claim, bool) {
	if !r.keyed {
		return stores.Claim{}, false
	}
	switch r.state {
	case 'p':
		if r.token == string(token) {
			// This Claim's own record: the client resent the command.
			c := stores.Claim{Status: stores.Acquired, Token: token, LeaseUntil: time.UnixMicro(r.t1)}
			c.Record.CreatedAt = time.UnixMicro(r.created)
			return c, true
		}
		c := stores.Claim{Status: stores.InProgress, LeaseUntil: time.UnixMicro(r.t1)}
		c.Record.Fingerprint = []byte(r.fingerprint)
		c.Record.CreatedAt = time.UnixMicro(r.created)
		return c, true
	case 'c':
		return stores.Claim{Status: stores.Completed, Record: stores.Record{
			Fingerprint: []byte(r.fingerprint), Result: []byte(r.result),
			CreatedAt: time.UnixMicro(r.created), CompletedAt: time.UnixMicro(r.t1), ExpiresAt: time.UnixMicro(r.t2),
		}}, true
	}
	return stores.Claim{}, false
}
