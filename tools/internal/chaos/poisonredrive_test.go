package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/admin"
	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/poison"
)

// The operator of the poison-and-redrive rows: their key of ADMIN_API_KEYS
// (16 characters or more, 8 of them distinct), and the name the service's
// log gives them.
const (
	redriveOperatorKey = "chaos-operator-key-0123456789"
	redriveOperator    = "chaos"
)

// poisonRedriveModes are the modes the poison-and-redrive rows run in: the
// record store changes, the poison store does not (every row has a
// DATABASE_URL, so both instances park in the row's PostgreSQL schema).
var poisonRedriveModes = modes[:2] // transaction-postgres, lease-redis

// redriveSize is how many payments a poison-and-redrive row sends: by a
// producer, each in copies copies, and through the service's API, once
// each.
func redriveSize(sc scale) (produced, posted int) {
	if sc.full {
		return 1500, 500 // 5,000 messages parked: five batches of poison.MaxBatch
	}
	return 20, 10
}

// Scenario 10, poison and redrive, on every broker of the picker: the
// provider refuses every charge for good (provider.Refuse), so that each
// payment the row sends — copies of each by a plain-Watermill producer,
// and one POST /v1/charges each through the service's API, spread over two
// instances — is poisoned by the charge route and parked by whichever
// instance read it, in the one PostgreSQL store both share. Nothing may be
// charged meanwhile. Then the provider is restored and an operator redrives
// every parked message with their key of ADMIN_API_KEYS through the
// admin API (POST /admin/poison/redrive, `onceflow poison redrive --all`'s
// call), a batch of at most poison.MaxBatch at a time, alternating between
// the instances. Every payment must then be charged exactly once at the
// provider and in the ledger, and notified: 0 lost, 0 doubled, although
// each produced payment was redriven once per copy; nothing may be left
// parked or parked again. The short variant runs one mode per broker.
func TestChaosPoisonRedrive(t *testing.T) {
	svc := setUp(t)
	sc := chaosScale()
	sc.parallel(t)
	for _, transport := range brokers() {
		for _, m := range poisonRedriveModes {
			if !sc.full && !shortRow("poison_redrive", transport, m.name) {
				continue
			}
			t.Run(transport+"/"+m.name, func(t *testing.T) {
				sc.parallel(t)
				setup := Setup{Transport: transport, Store: m.store, Mode: m.mode,
					Env: []string{"ADMIN_API_KEYS=" + redriveOperatorKey + ":" + redriveOperator}}
				poisonRedrive(t, svc, sc, setup)
			})
		}
	}
}

func poisonRedrive(t *testing.T, svc Services, sc scale, setup Setup) {
	produced, posted := redriveSize(sc)
	row := NewRow(t, svc, setup)
	row.Start(2)
	operators := make([]*admin.Client, len(row.Instances))
	for i, inst := range row.Instances {
		// No INTERNAL_ADDR: the admin API is on HTTP_ADDR, beside the API.
		operators[i] = &admin.Client{BaseURL: "http://" + inst.Addr, APIKey: redriveOperatorKey,
			HTTP: &http.Client{Timeout: 2 * time.Minute}}
	}
	ctx := t.Context()
	res := Result{Run: t.Name(), Scenario: "poison and redrive", Transport: setup.Transport, Mode: setup.modeLabel()}
	defer func() {
		res.PeakRSS = row.PeakRSS()
		if res.Verdict == "" {
			res.Verdict = "failed: see the test's log"
		}
		record(res)
	}()

	// The dependency fails for good: every charge is refused.
	row.provider.Refuse(true)
	ids := row.IDs(produced + posted)
	res.Unique = len(ids)
	byProducer, byAPI := ids[:produced], ids[produced:]
	msgs := make([]*message.Message, 0, produced*copies)
	for i, id := range byProducer {
		for range copies {
			msgs = append(msgs, testdomain.Event{ID: id, Amount: int64(100 + i)}.Message())
		}
	}
	rand.Shuffle(len(msgs), func(a, b int) { msgs[a], msgs[b] = msgs[b], msgs[a] })
	sent, err := row.publishMessages(msgs)
	res.Sent = sent
	if err != nil {
		t.Fatal(err)
	}
	n, err := row.postPayments(ctx, byAPI)
	res.Sent += n
	if err != nil {
		t.Fatal(err)
	}

	// Every message parked, as permanent, and nothing charged.
	parked, err := waitParked(ctx, operators[0], msgs, ids, res.Sent, sc.bound)
	if err != nil {
		t.Fatal(err)
	}
	problems := parkedProblems(parked)
	f, err := row.Ledger()
	if err != nil {
		t.Fatal(err)
	}
	if f.Charges.Rows != 0 || f.Provider.Charges != 0 {
		problems = append(problems, fmt.Sprintf("%d charges in the ledger and %d at the provider while it refused every charge, want none",
			f.Charges.Rows, f.Provider.Charges))
	}

	// The dependency restored, every parked message redriven.
	row.provider.Refuse(false)
	start := time.Now()
	redriven, batches, refused, err := redriveAll(ctx, operators, len(parked))
	if err != nil {
		t.Fatal(err)
	}
	if refused != 0 {
		problems = append(problems, fmt.Sprintf("%d parked messages refused for redrive, want none", refused))
	}
	if redriven != len(parked) {
		problems = append(problems, fmt.Sprintf("%d messages redriven of the %d parked", redriven, len(parked)))
	}
	stable := 3 * time.Second
	if sc.full {
		stable = 6 * time.Second
	}
	f, done, err := row.WaitFinished(len(ids), stable, sc.bound)
	res.Figures = f
	if !done.IsZero() {
		res.Recovery = done.Sub(start)
	}
	res.Fault = fmt.Sprintf("provider refused every charge for good: %d payments (%d by a producer x %d copies, %d through the API), %d messages parked (%d of them again: parking is at least once); "+
		"provider restored, %d redriven by an operator through the admin API in %d batches", len(ids), produced, copies, posted, len(parked), parkedAgain(parked), redriven, batches)
	res.Verdict = verdict(t, setup, len(ids), f, err)
	if err == nil {
		u := int64(len(ids))
		if f.Provider.Charges != u || f.Provider.IDs != u {
			problems = append(problems, fmt.Sprintf("the provider made %d charges of %d payments, want each of %d once", f.Provider.Charges, f.Provider.IDs, u))
		}
		if f.Doubles() != 0 {
			problems = append(problems, fmt.Sprintf("%d doubles in the ledger, want 0", f.Doubles()))
		}
	}
	left, err := listParked(ctx, operators[1], poison.Parked)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		problems = append(problems, fmt.Sprintf("%d messages parked after the redrive (the first: %s), want none", len(left), left[0].Reason))
	}
	settled, err := listParked(ctx, operators[1], poison.Redriven)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range settled {
		if m.SettledBy != redriveOperator {
			problems = append(problems, fmt.Sprintf("message %s redriven by %q, want the operator %q", m.ID, m.SettledBy, redriveOperator))
			break
		}
	}
	if len(settled) != redriven {
		problems = append(problems, fmt.Sprintf("%d messages listed as redriven, want the %d redriven", len(settled), redriven))
	}
	problems = append(problems, instanceProblems(row)...)
	if res.Verdict == "ok" {
		fail(t, &res, problems)
	} else if len(problems) > 0 {
		t.Errorf("also: %s", strings.Join(problems, "; "))
	}
	t.Logf("%s: %d payments, sent %d, parked %d (%d again), redriven %d in %d batches, charged %d at the provider (doubled %d), lost %d, %+v; all charged %v after the redrive began: %s",
		t.Name(), len(ids), res.Sent, len(parked), parkedAgain(parked), redriven, batches, f.Provider.IDs, f.ProviderDoubles(), f.Missing(len(ids)),
		f, res.Recovery.Round(100*time.Millisecond), res.Verdict)
}

// postPayments sends POST /v1/charges once for each id, with a key of its
// own, to the instances in turn, from 8 goroutines, and returns how many
// the service accepted (202). The first refusal stops it.
func (r *Row) postPayments(ctx context.Context, ids []string) (int, error) {
	client := &http.Client{Timeout: time.Minute}
	defer client.CloseIdleConnections()
	var (
		mu       sync.Mutex
		accepted int
		firstErr error
		wg       sync.WaitGroup
	)
	work := make(chan int)
	for range 8 {
		wg.Go(func() {
			for n := range work {
				resp, err := post(ctx, client, r.Instances[n%len(r.Instances)].Addr, "http-"+ids[n], requestBody(ids[n]))
				if err == nil {
					_ = resp.Body.Close()
					if resp.StatusCode != http.StatusAccepted {
						err = fmt.Errorf("POST %s: %s, want 202", createPath, resp.Status)
					}
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("posting payment %s: %w", ids[n], err)
				} else if err == nil {
					accepted++
				}
				mu.Unlock()
			}
		})
	}
	for n := range ids {
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed {
			break
		}
		work <- n
	}
	close(work)
	wg.Wait()
	return accepted, firstErr
}

// waitParked waits until every produced message (msgs, by UUID) and every
// payment (ids, by key) is parked, and returns every parked message; at
// most within. It lists them only once the admin API's summary counts at
// least sent.
func waitParked(ctx context.Context, c *admin.Client, msgs []*message.Message, ids []string, sent int, within time.Duration) ([]poison.Message, error) {
	deadline := time.Now().Add(within)
	count, missing := 0, len(msgs)+len(ids)
	for time.Now().Before(deadline) {
		s, err := c.PoisonSummary(ctx)
		if err == nil {
			count = 0
			for _, g := range s.Groups {
				count += g.Count
			}
		}
		if err == nil && count >= sent {
			parked, err := listParked(ctx, c, poison.Parked)
			if missing = unparked(parked, msgs, ids); err == nil && missing == 0 {
				return parked, nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil, fmt.Errorf("%w: %d messages parked of the %d sent, %d produced messages or payments not among them after %v",
		ErrStalled, count, sent, missing, within)
}

// unparked counts the produced messages (msgs, by UUID) and the payments
// (ids, by key) that are not among parked.
func unparked(parked []poison.Message, msgs []*message.Message, ids []string) int {
	uuids, keys := map[string]bool{}, map[string]bool{}
	for _, m := range parked {
		uuids[m.UUID], keys[m.Key] = true, true
	}
	missing := 0
	for _, msg := range msgs {
		if !uuids[msg.UUID] {
			missing++
		}
	}
	for _, id := range ids {
		if !keys[id] {
			missing++
		}
	}
	return missing
}

// listParked lists every message in state, page by page, through the
// admin API.
func listParked(ctx context.Context, c *admin.Client, state poison.State) ([]poison.Message, error) {
	var all []poison.Message
	f := poison.Filter{State: state, Limit: poison.MaxLimit}
	for {
		p, err := c.Poisoned(ctx, f)
		if err != nil {
			return all, fmt.Errorf("listing the %s messages: %w", state, err)
		}
		all = append(all, p.Messages...)
		if p.Next == "" {
			return all, nil
		}
		f.After = p.Next
	}
}

// parkedAgain counts the parked messages beyond the first of their UUID:
// a message parked twice (its poisoning, or its parking, redelivered).
func parkedAgain(parked []poison.Message) int {
	uuids := map[string]bool{}
	for _, m := range parked {
		uuids[m.UUID] = true
	}
	return len(parked) - len(uuids)
}

// parkedProblems checks that each parked message was poisoned by the
// charge route's refusal, as a permanent error.
func parkedProblems(parked []poison.Message) []string {
	var problems []string
	odd := 0
	for _, m := range parked {
		if m.Handler != testdomain.ChargeRoute || m.Topic != testdomain.TopicRequested || m.Class != poison.Permanent ||
			!strings.Contains(m.Reason, testdomain.ErrRefused.Error()) {
			if odd++; odd == 1 {
				problems = append(problems, fmt.Sprintf("a message parked by %s from %s as %s (%q), want by %s from %s as %s for the provider's refusal",
					m.Handler, m.Topic, m.Class, m.Reason, testdomain.ChargeRoute, testdomain.TopicRequested, poison.Permanent))
			}
		}
	}
	if odd > 1 {
		problems = append(problems, fmt.Sprintf("%d messages parked for another reason in all", odd))
	}
	return problems
}

// redriveAll redrives the want parked messages through the admin API, a
// batch (poison.MaxBatch at most) at a time, each through the next
// instance's, until want are redriven or a batch redrives nothing: a
// message poisoned again once redriven is parked anew, and is not
// redriven in a loop. It returns how many were redriven, in how many
// batches, and how many were refused (they stay parked).
func redriveAll(ctx context.Context, operators []*admin.Client, want int) (redriven, batches, refused int, err error) {
	refusals := map[string]bool{}
	for ; redriven < want; batches++ {
		b, err := operators[batches%len(operators)].RedriveAll(ctx, poison.Filter{}, false, false)
		if err != nil {
			return redriven, batches, len(refusals), fmt.Errorf("redriving batch %d: %w", batches+1, err)
		}
		for _, o := range b.Items {
			if o.Error != "" {
				refusals[o.Message.ID] = true
			}
		}
		if b.Done == 0 {
			break
		}
		redriven += b.Done
	}
	return redriven, batches, len(refusals), nil
}
