package app

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// tcpProxy forwards loopback TCP connections to a target until the test
// ends, closing at once every new connection for which refuse returns true:
// a broker that is down, or still starting.
type tcpProxy struct {
	addr  string
	mu    sync.Mutex
	conns []net.Conn // client and server side of each connection, in order
}

func startTCPProxy(t *testing.T, target string, refuse func() bool) *tcpProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{addr: l.Addr().String()}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			client, err := l.Accept()
			if err != nil {
				return
			}
			if refuse() {
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
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		wg.Wait()
	})
	return p
}

// flakyProxy refuses its first connections, then forwards.
type flakyProxy struct {
	*tcpProxy
	refused atomic.Int32
}

func startFlakyProxy(t *testing.T, target string, refuse int32) *flakyProxy {
	p := &flakyProxy{}
	p.tcpProxy = startTCPProxy(t, target, func() bool {
		if p.refused.Load() < refuse {
			p.refused.Add(1)
			return true
		}
		return false
	})
	return p
}

// switchProxy forwards until cutFirst, which closes the first connection
// made through it (the App dials its publishing connection first) and
// refuses new ones until restore.
type switchProxy struct {
	*tcpProxy
	down atomic.Bool
}

func startSwitchProxy(t *testing.T, target string) *switchProxy {
	p := &switchProxy{}
	p.tcpProxy = startTCPProxy(t, target, p.down.Load)
	return p
}

func (p *switchProxy) cutFirst() {
	p.down.Store(true)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns[:2] {
		_ = c.Close()
	}
}

func (p *switchProxy) restore() { p.down.Store(false) }
