package traffic_test

import (
	"io"
	"testing"
	"time"

	"github.com/onceflow/onceflow/app"
	"github.com/onceflow/onceflow/app/apptest"
	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/handlers/memory"
	"github.com/onceflow/onceflow/handlers/payments"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
)

// service is the payments domain running in a service.
type service struct{ *apptest.Service }

// startApp runs the payments domain in a service configured by environ
// until the test ends.
func startApp(t *testing.T, environ ...string) service {
	t.Helper()
	return service{apptest.Start(t, payments.Domain(), environ...)}
}

// cmdEnv is what the binary hands a command run with environ.
func cmdEnv(environ []string) domain.CommandEnv {
	return app.CommandEnv(nil, environ, io.Discard, io.Discard)
}

// summary is GET /v1/ledger/summary.
type summary struct {
	Payments      int `json:"payments"`
	Charges       int `json:"charges"`
	Notifications int `json:"notifications"`
}

func (s service) summary(t *testing.T) summary {
	t.Helper()
	var got summary
	if code := s.Get(t, "/v1/ledger/summary", &got); code != 200 {
		t.Fatalf("summary: status %d", code)
	}
	return got
}

func (s service) metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	return s.Metric(t, name, labels...)
}

// waitFor polls cond until it holds, failing the test after 20 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, 20*time.Second, what, cond)
}

// amqpAppEnv is the settings of a payments service on the shared
// RabbitMQ, under a TOPIC_PREFIX and SERVICE_NAME of its own whose durable
// exchanges and queues are deleted when t ends.
func amqpAppEnv(t *testing.T) (env []string, url, prefix string) {
	url = brokerenv.AMQP(t)
	prefix, name := testenv.Names()
	exchanges, queues := app.Config{TopicPrefix: prefix, ServiceName: name}.AMQPDeclared(
		handlers.NewMessageHandlers(memory.NewLedger(), nil, nil).Routes())
	brokerenv.DeleteAMQPOnCleanup(t, url, exchanges, queues)
	return []string{"TRANSPORT=amqp", "AMQP_URL=" + url, "STORE=memory",
		"TOPIC_PREFIX=" + prefix, "SERVICE_NAME=" + name}, url, prefix
}
