package chaos

import (
	"net"
	"sync"
)

// PausableListener is a net.Listener that can be cut off and restored:
// Pause closes every open connection and closes each new one as soon as it
// is accepted; Resume accepts again. The server behind it keeps its state,
// so for clients a pause looks like the server restarting with its data on
// disk: connections drop, reconnects fail, then succeed on the same port.
type PausableListener struct {
	net.Listener

	mu     sync.Mutex
	paused bool
	open   map[net.Conn]struct{}
}

// NewPausableListener wraps l.
func NewPausableListener(l net.Listener) *PausableListener {
	return &PausableListener{Listener: l, open: map[net.Conn]struct{}{}}
}

// Accept returns the next connection while not paused; during a pause it
// closes what it accepts and waits for the next.
func (p *PausableListener) Accept() (net.Conn, error) {
	for {
		c, err := p.Listener.Accept()
		if err != nil {
			return nil, err
		}
		p.mu.Lock()
		if p.paused {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		tc := &trackedConn{Conn: c, owner: p}
		p.open[tc] = struct{}{}
		p.mu.Unlock()
		return tc, nil
	}
}

// Pause drops every open connection and refuses new ones until Resume.
func (p *PausableListener) Pause() {
	p.mu.Lock()
	p.paused = true
	open := p.open
	p.open = map[net.Conn]struct{}{}
	p.mu.Unlock()
	for c := range open {
		_ = c.(*trackedConn).Conn.Close()
	}
}

// Resume accepts connections again.
func (p *PausableListener) Resume() {
	p.mu.Lock()
	p.paused = false
	p.mu.Unlock()
}

type trackedConn struct {
	net.Conn
	owner *PausableListener
}

func (c *trackedConn) Close() error {
	c.owner.mu.Lock()
	delete(c.owner.open, c)
	c.owner.mu.Unlock()
	return c.Conn.Close()
}
