package chaos

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
)

// Scenario 3, broker outage, in lease mode on the shared Redis: the Kafka
// broker "restarted" (every connection cut and refused for 10 s, its data
// kept: see Kafka), RabbitMQ cut off for 10 s by a TCP proxy in front of
// the shared node, a NATS server of the row's own killed and started again
// 10 s later on its JetStream store on disk, and a Redis of the row's own
// holding the streams (append-only file) shut down and restarted 10 s
// later. Nothing may be lost or doubled, the instances must reconnect by
// themselves, and /readyz must say so.
func brokerOutage(t *testing.T, svc Services, sc scale) {
	for _, transport := range brokersAmong("kafka", "amqp", "nats", "redisstream") {
		if !sc.full && !shortRow("broker_outage", transport, "lease-redis") {
			continue
		}
		t.Run(transport+"/lease-redis", func(t *testing.T) {
			sc.parallel(t)
			own, down, up, fault := brokerFault(t, svc, transport)
			setup := Setup{Transport: transport, Store: "redis", Mode: "lease"}
			row := NewRow(t, own, setup)
			// The producer, another team's service, keeps its own
			// connection; watermill-amqp's publisher also races with
			// itself while it reconnects, which -race would report.
			row.ProducerAMQPURL = svc.AMQPURL
			ids := row.IDs(sc.requests)
			o, err := row.RunOutage(ids, copies, outageHold, down, up)
			f, err := row.Settle(len(ids), err, sc.bound)
			res := Result{Run: t.Name(), Scenario: "broker outage", Transport: transport, Mode: setup.modeLabel(),
				Fault: fault, Sent: o.Sent, Unique: len(ids), Figures: f, Recovery: o.Resumed, PeakRSS: row.PeakRSS()}
			res.Verdict = verdict(t, setup, len(ids), f, err)
			var problems []string
			if f.Doubles() != 0 {
				problems = append(problems, fmt.Sprintf("%d doubles, want 0", f.Doubles()))
			}
			problems = append(problems, o.readinessProblems()...)
			fail(t, &res, problems)
			t.Logf("%s: sent %d, %+v, doubles %d, resumed %v after the broker returned", t.Name(), o.Sent, f, f.Doubles(), o.Resumed)
			record(res)
		})
	}
}

// brokerFault is the outage of transport's broker: the services the row
// runs on (a broker of its own where the fault needs one), what breaks it
// and mends it, and the fault as the report states it.
func brokerFault(t *testing.T, svc Services, transport string) (own Services, down, up func() error, fault string) {
	own = svc
	switch transport {
	case "kafka":
		return own, func() error { svc.Kafka.Pause(); return nil }, func() error { svc.Kafka.Resume(); return nil },
			"broker restarted, 10 s down (connections cut and refused, data kept)"
	case "amqp":
		u, err := url.Parse(svc.AMQPURL)
		if err != nil {
			t.Fatal(err)
		}
		link := NewLink(t, "amqp", u.Host)
		u.Host = link.Addr
		own.AMQPURL = u.String()
		return own, link.Cut, link.Restore,
			"RabbitMQ cut off from the instances 10 s (a Toxiproxy link in front of the node taken down)"
	case "nats":
		server := brokerenv.NATSServer(t)
		own.NATSURL = server.URL()
		return own, func() error { server.Stop(); return nil }, server.Start,
			"NATS server killed (SIGKILL) and started again 10 s later on its JetStream store"
	case "redisstream":
		server := testenv.RedisServer(t, redisArgs(true)...)
		own.StreamURL = "redis://" + server.Addr() + "/0"
		return own, func() error { server.Shutdown(); return nil }, server.Restart,
			"Redis of the streams (append-only file) shut down and restarted 10 s later"
	}
	t.Fatalf("no broker outage for transport %s", transport)
	return
}
