package amqp_test

import (
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/onceflow/onceflow/app"
	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/transport"
)

// serviceEnv is the environment of a service of the test domain on the
// test RabbitMQ with names of its own; its exchanges and queues are
// deleted when the test ends.
func serviceEnv(t *testing.T) []string {
	t.Helper()
	return brokerenv.ServiceEnv(t, transport.AMQP, declared)
}

// declared is what a service of the test domain declares on RabbitMQ.
func declared(prefix, service string) (exchanges, queues []string) {
	return app.Config{TopicPrefix: prefix, ServiceName: service}.AMQPDeclared(testdomain.Routes())
}

// rabbitMQAddr is the host:port of env's AMQP_URL.
func rabbitMQAddr(t *testing.T, env []string) string {
	t.Helper()
	u, err := amqp091.ParseURI(testenv.Setting(env, "AMQP_URL"))
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort(u.Host, fmt.Sprint(u.Port))
}

// viaProxy is env with its AMQP_URL at proxy, a proxy to its RabbitMQ.
func viaProxy(t *testing.T, env []string, proxy *testenv.Proxy) []string {
	t.Helper()
	url := testenv.Setting(env, "AMQP_URL")
	return append(env, "AMQP_URL="+strings.Replace(url, rabbitMQAddr(t, env), proxy.Addr(), 1))
}

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

// behindSwitch is serviceEnv with AMQP_URL at a switchProxy to RabbitMQ,
// and the proxy: cutting it is a broker outage.
func behindSwitch(t *testing.T) ([]string, *switchProxy) {
	t.Helper()
	env := serviceEnv(t)
	proxy := startSwitchProxy(t, rabbitMQAddr(t, env))
	return viaProxy(t, env, proxy.Proxy), proxy
}

// cutFirst closes the first connection made through the proxy (the
// service dials its publishing connection first) and refuses new ones.
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
