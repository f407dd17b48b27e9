package chaos

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/transport"
)

// scale sizes the runs: CHAOS_SCALE=full for `make chaos`, small by
// default so that a short variant runs in `make test`.
type scale struct {
	full          bool
	requests      int           // unique requests per row
	faultRequests int           // unique requests per handler-fault row
	kills         int           // SIGKILLs per crash-loop row
	bound         time.Duration // a row not finished this long after its last fault is stalled
}

func chaosScale() scale {
	if os.Getenv("CHAOS_SCALE") == "full" {
		return scale{full: true, requests: 5000, faultRequests: 1000, kills: 20, bound: 10 * time.Minute}
	}
	return scale{requests: 150, faultRequests: 100, kills: 3, bound: 3 * time.Minute}
}

// parallel runs t in parallel with its siblings in the short variant, to
// keep `make test` short; the full suite runs one row at a time, so that
// rows do not skew each other's figures.
func (s scale) parallel(t *testing.T) {
	if !s.full {
		t.Parallel()
	}
}

const copies = 3

var (
	services   Services
	report     Report
	suiteStart = time.Now()
)

// record adds res to the report and, with CHAOS_REPORT set, rewrites the
// file with every row so far, marked as in progress: an interrupted run
// still leaves the rows it measured. TestMain writes the final file.
func record(res Result) {
	report.Add(res)
	if path := os.Getenv("CHAOS_REPORT"); path != "" {
		_ = report.Write(path, reportHeader(), reportCommand(), time.Since(suiteStart), false)
	}
}

func TestMain(m *testing.M) {
	start := suiteStart
	code := m.Run()
	if path := os.Getenv("CHAOS_REPORT"); path != "" && report.Len() > 0 {
		if err := report.Write(path, reportHeader(), reportCommand(), time.Since(start), true); err != nil {
			fmt.Fprintln(os.Stderr, "writing the report:", err)
			code = 1
		}
	}
	if services.Kafka != nil {
		services.Kafka.Close()
	}
	Cleanup()
	StopToxiproxy()
	os.Exit(code)
}

// setUp builds the binary once, starts the Kafka broker once and checks
// the services the rows need, of the brokers the picker has: skipped under
// -short, failed when one is missing under REQUIRE_SERVICES=1.
func setUp(t *testing.T) Services {
	t.Helper()
	testenv.Integration(t)
	if services.Bin == "" {
		var err error
		if services.Bin, err = Build(); err != nil {
			t.Fatal(err)
		}
		if hasBroker("kafka") {
			if services.Kafka, err = StartKafka(); err != nil {
				t.Fatal(err)
			}
		}
		if hasBroker("amqp") {
			services.AMQPURL = brokerenv.AMQP(t)
		}
		if hasBroker("nats") {
			services.NATSURL = brokerenv.NATS(t)
		}
		services.RedisURL = "redis://" + testenv.RedisAddr() + "/0"
		services.StreamURL = services.RedisURL
	}
	testenv.Redis(t)
	return services
}

// brokers are the kinds of the service's transport picker that the rows
// run on, in its order: every one but the in-process transport, which
// instances in separate processes cannot share. A broker a fork adds to
// the picker gets its rows here, and fails them until NewPublisher, NewRow
// and ReadPoison know it.
func brokers() []string {
	return slices.DeleteFunc(slices.Clone(transport.Kinds), func(kind string) bool { return kind == "gochannel" })
}

// brokersAmong lists the kinds among want that the picker has, in want's
// order: the brokers a scenario runs on, less those a fork removed.
func brokersAmong(want ...string) []string {
	return slices.DeleteFunc(want, func(kind string) bool { return !hasBroker(kind) })
}

// hasBroker reports whether the picker has the transport kind.
func hasBroker(kind string) bool { return slices.Contains(transport.Kinds, kind) }

// needBroker skips t, a row specific to the broker kind, when the picker
// does not have it.
func needBroker(t *testing.T, kind string) {
	t.Helper()
	if !hasBroker(kind) {
		t.Skipf("the transport picker has no %s (transport.Kinds: %v)", kind, transport.Kinds)
	}
}

// modes are the receiver's modes with their stores, as the rows name them.
var modes = []struct {
	name        string
	store, mode string
}{
	{"transaction-postgres", "postgres", "transaction"},
	{"lease-redis", "redis", "lease"},
	{"lease-postgres", "postgres", "lease"},
}

// noKeysTransport is where the crash loop also runs lease mode without
// effect keys, beside its lease-redis row.
const noKeysTransport = "redisstream"

// mixedTransport is where the crash loop also runs a service whose routes
// mix the modes (Setup.Mixed), with effect keys and without: the ledger's
// routes must stay exact without them.
const mixedTransport = "amqp"

func (s Setup) modeLabel() string {
	label := s.Mode + ", " + s.Store
	if s.Mixed {
		label = s.Mode + " + transaction routes, " + s.Store
	}
	if s.NoEffectKeys {
		label += ", no effect keys"
	}
	return label
}

// verdict checks the figures against what the mode promises: every request
// charged and notified; in transaction mode exactly once, and in a mixed
// service notified exactly once (its notify route's mode); with effect
// keys, no request charged twice at the provider, in either mode. Lease
// mode's doubles in the ledger, and at the provider without effect keys,
// are counted, not failed.
func verdict(t *testing.T, s Setup, unique int, f Figures, err error) string {
	t.Helper()
	if err != nil {
		t.Error(err)
		if strings.Contains(err.Error(), ErrStalled.Error()) {
			return "stalled"
		}
		return "failed: " + err.Error()
	}
	var problems []string
	if m := f.Missing(unique); m != 0 {
		problems = append(problems, fmt.Sprintf("%d missing", m))
	}
	if s.Mode == "transaction" && (f.Charges.Rows != int64(unique) || f.Notices.Rows != int64(unique)) {
		problems = append(problems, fmt.Sprintf("%d charges and %d notices, want exactly %d", f.Charges.Rows, f.Notices.Rows, unique))
	}
	if s.Mixed && f.Notices.Rows != int64(unique) {
		problems = append(problems, fmt.Sprintf("%d notices from the transaction mode route, want exactly %d", f.Notices.Rows, unique))
	}
	if !s.NoEffectKeys && f.ProviderDoubles() != 0 {
		problems = append(problems, fmt.Sprintf("%d requests charged twice at the provider with effect keys, want none", f.ProviderDoubles()))
	}
	if len(problems) > 0 {
		t.Errorf("%s: %s", t.Name(), strings.Join(problems, "; "))
		return "failed: " + strings.Join(problems, "; ")
	}
	return "ok"
}

// fail fails t and res for problems beyond those of verdict, if any.
func fail(t *testing.T, res *Result, problems []string) {
	t.Helper()
	if len(problems) > 0 && res.Verdict == "ok" {
		t.Errorf("%v", problems)
		res.Verdict = fmt.Sprintf("failed: %v", problems)
	}
}

func reportHeader() []string {
	sc := chaosScale()
	return []string{
		"Every row runs the service on the template's test domain (app/apptest/testdomain): a request, published as an event on testdomain.requested, is charged at the domain's provider by its charge route, which adds a charge row to the domain's ledger; its notify route then adds a notice row.",
		fmt.Sprintf("Sizes: %d unique requests x %d copies per row (%d in the handler-fault rows), published in shuffled order from 8 goroutines by a plain-Watermill producer to two instances; crash loop: %d SIGKILLs of one of them at random moments, each restarted at once.", sc.requests, copies, sc.faultRequests, sc.kills),
		"Settings of every instance unless the row says otherwise: `" + strings.Join(RowDefaults, " ") + "`, and HANDLER_CONCURRENCY at its default.",
		"Every row's instances charge one provider (app/apptest/testdomain/provider, run by the test with its records and charges in PostgreSQL), with the receiver's effect keys as Idempotency-Key unless the row says \"no effect keys\".",
		"Figures are read after the row finished, from the ledger in PostgreSQL: charges (charge rows), missing = unique - distinct requests charged, doubles = charges - distinct requests charged, notices (notice rows); and from the provider's charges: provider charges, provider doubles = provider charges - distinct requests it charged. A row has finished when every request is charged and notified and the counts have not moved for DEDUP_LEASE + 2 s; one whose counts stop moving for " + StallAfter.String() + " with requests missing, or that has not finished " + sc.bound.String() + " after its last fault, is `stalled`.",
		"Recovery: crash loop, from the restart after the last SIGKILL until every request is charged and notified (it includes taking over the leases the killed instance held); graceful shutdown, from SIGTERM until the process exited; store and broker outages and network and process faults, from the fault's end (the store or broker back, the link healed, the process continued) until the ledger's charges next grew (— when nothing was left to charge); poison and redrive, from the operator's first redrive until every payment is charged and notified. Outage rows, and the rows whose fault hits one instance, also require /readyz of the instance hit to answer 503 in the middle of the fault and 200 within 30 s after it.",
		"Network faults are Toxiproxy proxies, on a Toxiproxy server the test starts: between each instance and its record store, between the instances and the provider, in front of RabbitMQ, and between a Redis master and its replica. A partition stops data both ways without closing anything; half-open stops the answers only.",
		"Kafka is the in-process Kafka-protocol broker (kfake) hosted by the test process; the instances reach it over TCP.",
	}
}

func reportCommand() string {
	if os.Getenv("CHAOS_SCALE") == "full" {
		return "make chaos"
	}
	return "cd tools && CHAOS_REPORT=" + os.Getenv("CHAOS_REPORT") + " go test ./internal/chaos/"
}
