package transporttest

import (
	"errors"
	"net"
	"sync"
	"time"
)

// CutDialer dials TCP until Cut, which closes every connection it made
// and fails every later dial: a process killed without a goodbye, as far
// as the broker can tell. A client given it as its dialer (sarama's
// Net.Proxy.Dialer, nats.SetCustomDialer) is the process. Safe for
// concurrent use; the zero value dials.
type CutDialer struct {
	mu    sync.Mutex
	down  bool
	conns []net.Conn
}

// Dial connects to addr on network, within 5 seconds, unless the dialer
// was cut.
func (d *CutDialer) Dial(network, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.down {
		return nil, errors.New("cut")
	}
	c, err := net.DialTimeout(network, addr, 5*time.Second)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

// Cut closes every connection made so far and fails the dials to come.
func (d *CutDialer) Cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down = true
	for _, c := range d.conns {
		_ = c.Close()
	}
}
