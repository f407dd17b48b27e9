package testenv

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy forwards loopback TCP connections to a target until the test ends.
// It counts the connections it accepts, which is how a test sees how many
// a client opened, and can cut them to stage an outage.
type Proxy struct {
	addr     string
	accepted atomic.Int64
	mu       sync.Mutex
	conns    []net.Conn // client and server side of each connection, in order
}

// StartProxy forwards connections to target, closing at once every new
// one for which refuse (nil: never) returns true: a server that is down,
// or still starting.
func StartProxy(t testing.TB, target string, refuse func() bool) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{addr: l.Addr().String()}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			client, err := l.Accept()
			if err != nil {
				return
			}
			p.accepted.Add(1)
			if refuse != nil && refuse() {
				_ = client.Close()
				continue
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				_ = client.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, client, server)
			p.mu.Unlock()
			for _, pair := range [][2]net.Conn{{client, server}, {server, client}} {
				wg.Go(func() {
					_, _ = io.Copy(pair[0], pair[1])
					_ = pair[0].Close()
					_ = pair[1].Close()
				})
			}
		}
	})
	t.Cleanup(func() {
		_ = l.Close()
		p.CutAll()
		wg.Wait()
	})
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.addr }

// Accepted is how many connections the proxy accepted so far, refused
// ones included.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// Cut closes the n-th connection forwarded (0: the first), both sides.
func (p *Proxy) Cut(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns[2*n : 2*n+2] {
		_ = c.Close()
	}
}

// CutAll closes every connection forwarded so far.
func (p *Proxy) CutAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
}
