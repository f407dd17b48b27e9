package testenv

import (
	"net"
	"testing"
)

// ClosedAddr returns a loopback host:port that nothing listens on now: a
// service that is down, or a free port for a server the test starts.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}
