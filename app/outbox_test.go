package app

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
)

// TestOutboxDeliversAfterBrokerOutage cuts the service's publishing
// connection to RabbitMQ, the one the outbox relay uses, while payments keep
// arriving. In transaction mode the API still
// accepts them (each payment and its PaymentRequested commit to PostgreSQL,
// the event to the outbox); once the broker is back, the relay delivers
// every accumulated event, and each payment is charged and notified once.
func TestOutboxDeliversAfterBrokerOutage(t *testing.T) {
	env, url, _ := amqpAppEnv(t)
	proxy := startSwitchProxy(t, amqpHostPort(t, url))
	env = append(env, "AMQP_URL="+strings.Replace(url, amqpHostPort(t, url), proxy.addr, 1),
		"STORE=postgres", "DATABASE_URL="+testenv.PostgresSchema(t), "DEDUP_MODE=transaction")
	a := startApp(t, env...)

	if code := a.post(t, "/v1/payments", paymentBody("before-outage")); code != http.StatusAccepted {
		t.Fatalf("POST before the outage: status %d", code)
	}
	waitFor(t, "the first payment notified", func() bool { return a.summary(t).Notifications == 1 })

	proxy.cutFirst()
	const during = 20
	for i := range during {
		if code := a.post(t, "/v1/payments", paymentBody(fmt.Sprintf("during-outage-%d", i))); code != http.StatusAccepted {
			t.Fatalf("POST %d during the outage: status %d, want 202 (the event waits in the outbox)", i, code)
		}
	}
	if s := a.summary(t); s.Charges != 1 {
		t.Fatalf("during the outage: %+v, want still 1 charge", s)
	}

	proxy.restore()
	waitForWithin(t, 60*time.Second, "every payment notified after the outage", func() bool {
		return a.summary(t).Notifications == during+1
	})
	if s := a.summary(t); s.Charges != during+1 {
		t.Errorf("after the outage: %d charges, want exactly %d", s.Charges, during+1)
	}
	t.Logf("after the outage: %d payments relayed from the outbox, %+v", during, a.summary(t))
}

// switchProxy forwards TCP connections to a target until cutFirst, which
// closes the first connection made through it (the App dials its
// publishing connection first) and refuses new ones until restore.
type switchProxy struct {
	addr  string
	down  atomic.Bool
	mu    sync.Mutex
	conns []net.Conn // client and server side of each connection, in order
}

// startSwitchProxy listens on loopback and forwards to target until the
// test ends.
func startSwitchProxy(t *testing.T, target string) *switchProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &switchProxy{addr: l.Addr().String()}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			client, err := l.Accept()
			if err != nil {
				return
			}
			if p.down.Load() {
				_ = client.Close()
				continue
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				_ = client.Close()
				continue
			}
			p.track(client, server)
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
		p.closeAll()
		wg.Wait()
	})
	return p
}

func (p *switchProxy) track(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns = append(p.conns, cs...)
}

func (p *switchProxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// cutFirst closes the first forwarded connection and refuses new ones.
func (p *switchProxy) cutFirst() {
	p.down.Store(true)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns[:2] {
		_ = c.Close()
	}
}

// restore forwards new connections again.
func (p *switchProxy) restore() { p.down.Store(false) }
