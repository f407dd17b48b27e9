package amqp_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/onceflow/onceflow/app/apptest"
	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
)

// TestOutboxDeliversAfterBrokerOutage cuts the service's publishing
// connection to RabbitMQ, the one the outbox relay uses, while requests
// keep arriving. In transaction mode the API still accepts them (each
// request and its event commit to PostgreSQL, the event to the outbox);
// once the broker is back, the relay delivers every accumulated event, and
// each request is charged and noticed once.
func TestOutboxDeliversAfterBrokerOutage(t *testing.T) {
	env, proxy := behindSwitch(t)
	env = append(env, "STORE=postgres", "DATABASE_URL="+testenv.PostgresSchema(t), "DEDUP_MODE=transaction")
	s := apptest.Start(t, testdomain.Domain(), env...)

	flowtest.PostOK(t, s, "before-outage")
	testenv.WaitFor(t, flowtest.Wait, "the first request noticed", func() bool { return flowtest.Tally(t, s).Notices.Rows == 1 })

	proxy.cutFirst()
	const during = 20
	for i := range during {
		flowtest.PostOK(t, s, fmt.Sprintf("during-outage-%d", i)) // the event waits in the outbox
	}
	if got := flowtest.Tally(t, s); got.Charges.Rows != 1 {
		t.Fatalf("during the outage: %+v, want still 1 charge", got)
	}

	proxy.restore()
	testenv.WaitFor(t, 60*time.Second, "every request noticed after the outage", func() bool {
		return flowtest.Tally(t, s).Notices.Rows == during+1
	})
	if got := flowtest.Tally(t, s); got.Charges.Rows != during+1 {
		t.Errorf("after the outage: %d charges, want exactly %d", got.Charges.Rows, during+1)
	}
	t.Logf("after the outage: %d requests relayed from the outbox, %+v", during, flowtest.Tally(t, s))
}
