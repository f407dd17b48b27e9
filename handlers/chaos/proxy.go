package chaos

import (
	"io"
	"net"
)

// Proxy forwards TCP connections to a target behind a PausableListener:
// pausing it cuts every connection through it and refuses new ones, which
// to a client looks like the target going down and coming back on the same
// address.
type Proxy struct {
	*PausableListener
	Addr string
}

// StartProxy listens on a free loopback port and forwards to target until
// Close.
func StartProxy(target string) (*Proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{PausableListener: NewPausableListener(l), Addr: l.Addr().String()}
	go func() {
		for {
			c, err := p.Accept()
			if err != nil {
				return
			}
			go forward(c, target)
		}
	}()
	return p, nil
}

func forward(c net.Conn, target string) {
	defer c.Close()
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}
