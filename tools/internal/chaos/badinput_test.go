package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
)

// rssBound is the peak resident set an instance may reach while it reads
// bad input, a 10 MiB payload among it: generous, so that only a leak or a
// runaway copy fails it.
const rssBound = 512 << 20

// badInputRows are the rows of scenario 5; the short variant runs the ones
// marked short.
var badInputRows = []struct {
	transport, name, store, mode string
	short                        bool
}{
	{"amqp", "lease-redis", "redis", "lease", true},
	{"amqp", "transaction-postgres", "postgres", "transaction", false},
	{"sql", "lease-redis", "redis", "lease", false},
	{"sql", "transaction-postgres", "postgres", "transaction", true},
	{"kafka", "lease-redis", "redis", "lease", false},
}

// inputKind is one kind of odd message mixed into the good ones. A bad
// kind (reason set) must reach the poison topic with a reason containing
// reason, what the test domain's decoder (testdomain.Decode) or the
// service says of it; a tolerated kind (reason empty) is a valid request
// the message contract accepts and must be charged exactly once.
type inputKind struct {
	name   string
	reason string
	n      func(full bool) int
	make   func(id string) *message.Message
	// notOn lists the transports that cannot carry this kind, and why.
	notOn map[string]string
}

func count(short, full int) func(bool) int {
	return func(f bool) int {
		if f {
			return full
		}
		return short
	}
}

// payload is a testdomain.Event's payload for id, with amount and client
// as JSON values, of the right type or not.
func payload(id, amount, client string) []byte {
	return []byte(fmt.Sprintf(`{"client":%s,"id":%q,"amount":%s}`, client, id, amount))
}

// anonymous is the client of a producer's event, the anonymous one.
const anonymous = `""`

func rawMessage(key string, body []byte) *message.Message {
	msg := message.NewMessage(watermill.NewUUID(), body)
	msg.Metadata.Set("idempotency_key", key)
	return msg
}

// sqlNeedsJSON is why the sql transport cannot carry a payload that is not
// JSON: watermill-sql's default PostgreSQL schema stores it in a JSON column.
const sqlNeedsJSON = "the sql transport stores payloads in a JSON column: the producer's insert fails"

// kafkaMaxMessage is why the kafka transport cannot carry 10 MiB: Kafka's
// default message.max.bytes (1 MiB, also the in-process broker's) and the
// producer's Producer.MaxMessageBytes (1 MB) refuse it.
const kafkaMaxMessage = "Kafka's default message.max.bytes and sarama's Producer.MaxMessageBytes are 1 MB: the producer refuses it"

var inputKinds = []inputKind{
	{name: "not JSON", reason: "invalid character", n: count(2, 10), notOn: map[string]string{"sql": sqlNeedsJSON},
		make: func(id string) *message.Message { return rawMessage(id, []byte("not JSON \xff\xfe at all")) }},
	{name: "truncated JSON", reason: "unexpected end of JSON input", n: count(2, 10), notOn: map[string]string{"sql": sqlNeedsJSON},
		make: func(id string) *message.Message {
			p := payload(id, "100", anonymous)
			return rawMessage(id, p[:len(p)/2])
		}},
	{name: "wrong type amount", reason: "amount: has the wrong JSON type", n: count(2, 10),
		make: func(id string) *message.Message { return rawMessage(id, payload(id, `"100"`, anonymous)) }},
	{name: "wrong type client", reason: "client: has the wrong JSON type", n: count(2, 10),
		make: func(id string) *message.Message { return rawMessage(id, payload(id, "100", "42")) }},
	// Over MAX_MESSAGE_BYTES (4 MiB by default): poisoned before it is
	// decoded, retried or claimed.
	{name: "10 MiB payload", reason: "payload_too_large", n: count(1, 3), notOn: map[string]string{"kafka": kafkaMaxMessage},
		make: func(id string) *message.Message {
			return rawMessage(id, payload(strings.Repeat("x", 10<<20), "100", anonymous))
		}},
	{name: "empty key", n: count(2, 10),
		make: func(id string) *message.Message { return rawMessage("", payload(id, "100", anonymous)) }},
	{name: "100 KiB key", n: count(2, 10),
		make: func(id string) *message.Message {
			return rawMessage(id+strings.Repeat("k", 100<<10), payload(id, "100", anonymous))
		}},
	{name: "invalid UTF-8 key", n: count(2, 10),
		make: func(id string) *message.Message { return rawMessage(id+"\xff\xfe", payload(id, "100", anonymous)) }},
	{name: "invalid UTF-8 metadata", n: count(2, 10),
		make: func(id string) *message.Message {
			msg := rawMessage(id, payload(id, "100", anonymous))
			msg.Metadata.Set("note", "\xc3\x28\xff")
			return msg
		}},
}

// reusedKeyReason is the reason of a key reused for another payload.
const reusedKeyReason = "fingerprint"

// idReason is the reason of an event whose id is not one: the test
// domain's decoder names the field.
const idReason = "id: must be 1 to 128 of"

// Scenario 5, bad input: every kind of odd message mixed into good
// requests (one copy each). Bad ones go to the poison topic with a reason
// naming their problem; tolerated ones (an empty key falls back to the
// UUID, a long or invalid-UTF-8 key is hashed by the store) and the good
// ones are charged exactly once; nothing panics and memory stays bounded.
// Once they are charged, a payload under a used key is sent for some of
// them: poisoned as a fingerprint mismatch, never charged.
func TestChaosBadInput(t *testing.T) {
	svc := setUp(t)
	sc := chaosScale()
	for _, r := range badInputRows {
		if (!sc.full && !r.short) || !hasBroker(r.transport) {
			continue
		}
		t.Run(r.transport+"/"+r.name, func(t *testing.T) {
			if !sc.full {
				t.Parallel() // own topics, schema and instances; at full size one row at a time
			}
			badInput(t, svc, sc, Setup{Transport: r.transport, Store: r.store, Mode: r.mode})
		})
	}
}

func badInput(t *testing.T, svc Services, sc scale, setup Setup) {
	good, reused := 300, 2
	if sc.full {
		good, reused = 10000, 10
	}
	row := NewRow(t, svc, setup)
	row.Start(2)
	poison, err := row.ReadPoison()
	if err != nil {
		t.Fatal(err)
	}
	defer poison.Close()

	ids := row.IDs(good)
	var (
		msgs    []*message.Message
		wantBad = map[string]string{} // UUID -> kind name
		reasons = map[string]string{} // kind name -> wanted reason
		skipped []string
		unique  = good
		nBad    int
		longKey struct{ id, key string } // a tolerated 100 KiB key, reused below
	)
	for _, id := range ids {
		msgs = append(msgs, testdomain.Event{ID: id, Amount: 100}.Message())
	}
	for _, k := range inputKinds {
		if why, ok := k.notOn[setup.Transport]; ok {
			skipped = append(skipped, k.name+" ("+why+")")
			continue
		}
		for i := range k.n(sc.full) {
			id := fmt.Sprintf("odd-%s%s-%d", row.Prefix, strings.ReplaceAll(k.name, " ", "_"), i)
			msg := k.make(id)
			msgs = append(msgs, msg)
			if k.reason == "" {
				unique++
				if k.name == "100 KiB key" {
					longKey.id, longKey.key = id, msg.Metadata.Get("idempotency_key")
				}
				continue
			}
			nBad++
			wantBad[msg.UUID] = k.name
			reasons[k.name] = k.reason
		}
	}
	rand.Shuffle(len(msgs), func(a, b int) { msgs[a], msgs[b] = msgs[b], msgs[a] })
	sent, err := row.publishMessages(msgs)
	if err != nil {
		t.Fatal(err)
	}
	if setup.Transport == "kafka" {
		// What Kafka can carry instead of 10 MiB: a bad payload as large as
		// the producer sends, which the poison topic must still take.
		uuid, size, err := row.publishAtKafkaLimit("odd-" + row.Prefix + "at-limit")
		if err != nil {
			t.Fatal(err)
		}
		kind := fmt.Sprintf("%d-byte payload (the producer's limit)", size)
		wantBad[uuid], reasons[kind] = kind, idReason
		nBad++
		sent++
	}
	// One copy of each request, so the bound is the suite's plus the time
	// the row's size takes at a slow 50 requests/s on a loaded machine.
	bound := sc.bound + time.Duration(unique)*20*time.Millisecond
	f, _, err := row.WaitFinished(unique, 3*time.Second, bound)
	if err != nil {
		t.Error(err)
		report.Add(Result{Run: t.Name(), Scenario: "bad input", Transport: setup.Transport, Mode: setup.modeLabel(),
			Fault: fmt.Sprintf("%d good + %d tolerated + %d bad", good, unique-good, nBad), Sent: sent, Unique: unique,
			Figures: f, PeakRSS: row.PeakRSS(), Verdict: "stalled"})
		return
	}

	// A payload under a key already completed: another amount.
	var again []*message.Message
	for _, id := range ids[:reused] {
		msg := rawMessage(id, payload(id, "999", anonymous))
		again = append(again, msg)
		wantBad[msg.UUID] = "reused key"
		reasons["reused key"] = reusedKeyReason
		nBad++
	}
	if longKey.key != "" {
		msg := rawMessage(longKey.key, payload(longKey.id, "999", anonymous))
		again = append(again, msg)
		wantBad[msg.UUID] = "reused 100 KiB key"
		reasons["reused 100 KiB key"] = reusedKeyReason
		nBad++
	}
	n, err := row.publishMessages(again)
	sent += n
	if err != nil {
		t.Fatal(err)
	}

	// Every bad message in the poison topic, then the ledger unchanged.
	deadline := time.Now().Add(bound)
	seen := poison.Seen()
	for ; time.Now().Before(deadline) && !allIn(wantBad, seen); seen = poison.Seen() {
		time.Sleep(250 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	seen = poison.Seen()
	if f, err = row.Ledger(); err != nil {
		t.Fatal(err)
	}

	var problems []string
	example := map[string]string{} // kind -> one reason, for the log
	for uuid, kind := range wantBad {
		p, ok := seen[uuid]
		if ok {
			example[kind] = p.Reason
		}
		switch {
		case !ok:
			problems = append(problems, kind+": not poisoned")
		case p.Reason == "":
			problems = append(problems, kind+": poisoned without a reason")
		case !strings.Contains(p.Reason, reasons[kind]):
			problems = append(problems, fmt.Sprintf("%s: reason %q does not name %q", kind, p.Reason, reasons[kind]))
		}
	}
	for uuid := range seen {
		if _, ok := wantBad[uuid]; !ok {
			problems = append(problems, "a good or tolerated message poisoned: "+seen[uuid].Reason)
		}
	}
	if u := int64(unique); f.Charges.Rows != u || f.Charges.IDs != u || f.Notices.Rows != u {
		problems = append(problems, fmt.Sprintf("%d charges of %d requests and %d notices, want exactly %d", f.Charges.Rows, f.Charges.IDs, f.Notices.Rows, unique))
	}
	problems = append(problems, instanceProblems(row)...)
	peak := row.PeakRSS()
	if peak > rssBound {
		problems = append(problems, fmt.Sprintf("peak RSS %d MiB, over the bound %d MiB", peak>>20, rssBound>>20))
	}
	problems = dedupe(problems)

	fault := fmt.Sprintf("%d good + %d tolerated + %d bad, %d poisoned", good, unique-good, nBad, len(seen))
	if len(skipped) > 0 {
		fault += "; not sent: " + strings.Join(skipped, ", ")
	}
	res := Result{Run: t.Name(), Scenario: "bad input", Transport: setup.Transport, Mode: setup.modeLabel(),
		Fault: fault, Sent: sent, Unique: unique, Figures: f, PeakRSS: peak, Verdict: "ok"}
	if len(problems) > 0 {
		res.Verdict = "failed: " + strings.Join(problems, "; ")
		t.Error(res.Verdict)
	}
	t.Logf("%s: %s; sent %d, %+v, peak RSS %d MiB (bound %d MiB): %s", t.Name(), fault, sent, f, peak>>20, rssBound>>20, res.Verdict)
	for kind, reason := range example {
		t.Logf("  %s -> reason_poisoned %q", kind, reason)
	}
	report.Add(res)
}

func allIn(want map[string]string, seen map[string]Poisoned) bool {
	for uuid := range want {
		if _, ok := seen[uuid]; !ok {
			return false
		}
	}
	return true
}

// instanceProblems reports instances that are no longer running or whose
// log mentions a panic.
func instanceProblems(row *Row) []string {
	var problems []string
	for _, i := range row.Instances {
		select {
		case <-i.exitedChan():
			problems = append(problems, i.Name+" is not running")
		default:
		}
		if b, err := os.ReadFile(i.LogPath); err == nil && strings.Contains(strings.ToLower(string(b)), "panic") {
			problems = append(problems, i.Name+"'s log mentions a panic")
		}
	}
	return problems
}

func dedupe(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// publishMessages sends msgs to the row's TopicRequested with the
// plain-Watermill producer of its transport, from 8 goroutines, and returns
// how many it sent. Each message is published once; the first error stops it.
func (r *Row) publishMessages(msgs []*message.Message) (int, error) {
	pub, err := r.publisher()
	if err != nil {
		return 0, err
	}
	defer pub.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	work := make(chan *message.Message)
	var (
		mu       sync.Mutex
		sent     int
		firstErr error
		wg       sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			for msg := range work {
				err := pub.Publish(r.requested(), msg)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("publishing message %s: %w", msg.UUID, err)
					cancel()
				} else if err == nil {
					sent++
				}
				mu.Unlock()
			}
		})
	}
	for _, msg := range msgs {
		if ctx.Err() != nil {
			break
		}
		work <- msg
	}
	close(work)
	wg.Wait()
	return sent, firstErr
}

// publishAtKafkaLimit publishes, to the row's TopicRequested on kafka, one
// request whose 1 MB id makes it invalid (idReason) and as large as
// the plain-Watermill producer (sarama's Producer.MaxMessageBytes, 1 MB)
// accepts, to within 64 bytes. It returns its UUID and payload size.
func (r *Row) publishAtKafkaLimit(id string) (string, int, error) {
	pub, err := NewPublisher("kafka", "", r.svc.Kafka.Brokers())
	if err != nil {
		return "", 0, err
	}
	defer pub.Close()
	for n := 1_000_000; n > 900_000; n -= 64 {
		body := payload(strings.Repeat("x", n), "100", anonymous)
		msg := rawMessage(id, body)
		err := pub.Publish(r.requested(), msg)
		if err == nil {
			return msg.UUID, len(body), nil
		}
		if !errors.Is(err, sarama.ErrMessageSizeTooLarge) {
			return "", 0, fmt.Errorf("publishing a %d-byte payload: %w", len(body), err)
		}
	}
	return "", 0, fmt.Errorf("the producer refused every payload down to 900 kB")
}
