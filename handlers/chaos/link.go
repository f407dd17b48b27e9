package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// Link is a Toxiproxy proxy, run in this process, between a row's
// instances and one service they reach over TCP (a record store, a
// broker): a row's network faults are done to its links, never to the
// service the other rows share.
type Link struct {
	Addr string // where the instances connect, 127.0.0.1:port

	proxy *toxiproxy.Proxy
}

// toxiServer is what Toxiproxy's proxies report to; its API is not served.
var toxiServer = sync.OnceValue(func() *toxiproxy.ApiServer {
	return toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
})

// NewLink starts a link to upstream (host:port) on a free loopback port;
// it stops when t ends.
func NewLink(t testing.TB, name, upstream string) *Link {
	t.Helper()
	p := toxiproxy.NewProxy(toxiServer(), name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("starting link %s to %s: %v", name, upstream, err)
	}
	t.Cleanup(p.Stop)
	return &Link{Addr: p.Listen, proxy: p}
}

// Cut takes the link down: its connections are closed and new ones are
// refused, as when the service behind it goes away. Restore brings it back
// on the same address.
func (l *Link) Cut() { l.proxy.Stop() }

// Restore undoes Cut.
func (l *Link) Restore() error { return l.proxy.Start() }

// Retarget points the link at another upstream, as a virtual IP moves to
// a promoted replica: its connections are closed, new ones reach upstream.
func (l *Link) Retarget(upstream string) error {
	return l.proxy.Update(&toxiproxy.Proxy{Listen: l.Addr, Upstream: upstream, Enabled: true})
}

// The directions of a toxic: toward the service, and back from it.
const (
	Upstream   = "upstream"
	Downstream = "downstream"
)

// Add adds Toxiproxy's toxic kind (latency, timeout, ...) with attrs to
// one direction of every connection through the link, open and to come,
// under name, until Remove.
func (l *Link) Add(name, kind, direction string, attrs map[string]any) error {
	b, err := json.Marshal(map[string]any{"name": name, "type": kind, "stream": direction, "toxicity": 1, "attributes": attrs})
	if err != nil {
		return err
	}
	if _, err := l.proxy.Toxics.AddToxicJson(bytes.NewReader(b)); err != nil {
		return fmt.Errorf("adding toxic %s to link %s: %w", name, l.proxy.Name, err)
	}
	return nil
}

// Remove takes the toxic name away.
func (l *Link) Remove(name string) error {
	if err := l.proxy.Toxics.RemoveToxic(context.Background(), name); err != nil {
		return fmt.Errorf("removing toxic %s from link %s: %w", name, l.proxy.Name, err)
	}
	return nil
}

// Silence stops data in direction (or both, with no direction) from
// passing, without closing anything: a partition, or with Downstream
// alone a half-open connection whose requests arrive and whose answers do
// not. The returned function ends it.
func (l *Link) Silence(directions ...string) (func() error, error) {
	if len(directions) == 0 {
		directions = []string{Upstream, Downstream}
	}
	var names []string
	undo := func() error {
		for _, n := range names {
			if err := l.Remove(n); err != nil {
				return err
			}
		}
		return nil
	}
	for _, d := range directions {
		name := "silence_" + d
		if err := l.Add(name, "timeout", d, map[string]any{"timeout": 0}); err != nil {
			_ = undo()
			return nil, err
		}
		names = append(names, name)
	}
	return undo, nil
}
