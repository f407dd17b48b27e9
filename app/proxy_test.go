package app

import (
	"sync/atomic"
	"testing"

	"github.com/onceflow/onceflow/internal/testenv"
)

// flakyProxy refuses its first connections, then forwards.
type flakyProxy struct {
	*testenv.Proxy
	refused atomic.Int32
}

func startFlakyProxy(t *testing.T, target string, refuse int32) *flakyProxy {
	p := &flakyProxy{}
	p.Proxy = testenv.StartProxy(t, target, func() bool {
		if p.refused.Load() < refuse {
			p.refused.Add(1)
			return true
		}
		return false
	})
	return p
}

// switchProxy forwards until it is cut, then refuses new connections
// until restore.
type switchProxy struct {
	*testenv.Proxy
	down atomic.Bool
}

func startSwitchProxy(t *testing.T, target string) *switchProxy {
	p := &switchProxy{}
	p.Proxy = testenv.StartProxy(t, target, p.down.Load)
	return p
}

// cutFirst closes the first connection made through the proxy (the App
// dials its publishing connection first) and refuses new ones.
func (p *switchProxy) cutFirst() {
	p.down.Store(true)
	p.Cut(0)
}

// cutAll closes every connection made through the proxy and refuses new
// ones: the broker is down.
func (p *switchProxy) cutAll() {
	p.down.Store(true)
	p.CutAll()
}

func (p *switchProxy) restore() { p.down.Store(false) }
