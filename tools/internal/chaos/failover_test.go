package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/internal/testenv"
)

// failoverCase is one row of the Redis failover: how many replicas a
// completed record waits for (REDIS_WAIT_REPLICAS), and whether the
// handlers' effects carry their effect keys.
type failoverCase struct {
	wait         int
	noEffectKeys bool
}

func (c failoverCase) name() string {
	name := "failover-no-wait"
	if c.wait > 0 {
		name = fmt.Sprintf("failover-wait-%d", c.wait)
	}
	if c.noEffectKeys {
		name += "-no-effect-keys"
	}
	return name
}

// rejoinAfter is how long the promoted replica runs without a replica of
// its own before the old master rejoins as one.
const rejoinAfter = 5 * time.Second

// downAfter is how long the master is gone before its replica is
// promoted: Sentinel's down-after-milliseconds, and the time its quorum
// takes to agree.
const downAfter = 2 * time.Second

// replicationLag is the latency of the link the replica replicates
// through, as between two zones: the replica is always a little behind.
const replicationLag = 20 // ms, ± a quarter

// Scenario 9, Redis failover, on RabbitMQ in lease mode: the record store
// is a Redis master of the row's own (append-only file) with one replica
// that replicates through a link 20 ms slow, as across zones; the
// instances reach the master through another link. While the requests are
// handled the master is killed (SIGKILL); 2 s later the replica is
// promoted (REPLICAOF NO ONE) and the link moved to it, as Sentinel and a
// virtual IP would do; 5 s later the old master is started again as a
// replica of the new one. Records the master wrote and had not yet
// replicated are gone after the promotion; REDIS_WAIT_REPLICAS=1 makes
// Complete wait until the replica has the record. Until the old master is
// back the new one has no replica: each Complete then waits
// REDIS_WAIT_TIMEOUT, is asked again while it fails, and gives up after
// the receiver's finish timeout, its record on the master (the row logs
// how many). Each setting runs with the effect keys and without them, in
// make chaos only.
func redisFailover(t *testing.T, svc Services, sc scale) {
	const transport = "amqp"
	for _, c := range []failoverCase{{0, false}, {1, false}, {0, true}, {1, true}} {
		if !sc.full {
			continue // make chaos only: two Redis servers and a failover per row
		}
		t.Run(transport+"/"+c.name(), func(t *testing.T) {
			needBroker(t, transport)
			sc.parallel(t)
			failoverRow(t, svc, sc, transport, c)
		})
	}
}

func failoverRow(t *testing.T, svc Services, sc scale, transport string, c failoverCase) {
	// Without the delay a master waits 5 s for more replicas before it
	// sends its data to one; the promoted replica is the old master's.
	args := append(redisArgs(true), "--repl-diskless-sync-delay", "0")
	master := testenv.RedisServer(t, args...)
	replication := NewLink(t, "replication-"+c.name(), master.Addr())
	if err := replication.Add("lag", "latency", Downstream, map[string]any{"latency": replicationLag, "jitter": replicationLag / 4}); err != nil {
		t.Fatal(err)
	}
	replica := testenv.RedisReplicaVia(t, master, replication.Addr, args...)
	link := NewLink(t, "redis-"+c.name(), master.Addr())
	own := svc
	own.RedisURL = "redis://" + link.Addr + "/0"
	setup := Setup{Transport: transport, Store: "redis", Mode: "lease", NoEffectKeys: c.noEffectKeys,
		Env: []string{fmt.Sprintf("REDIS_WAIT_REPLICAS=%d", c.wait)}}
	row := NewRow(t, own, setup)
	ids := row.IDs(sc.requests)

	row.Start(2)
	var sent int
	published := make(chan error, 1)
	go func() {
		var err error
		sent, err = row.Publish(context.Background(), ids, copies)
		published <- err
	}()
	fo, err := failover(row, len(ids), master, replica, link)
	if perr := <-published; err == nil {
		err = perr
	}
	f, err := row.Settle(len(ids), err, sc.bound)

	mode := setup.modeLabel() + ", " + fmt.Sprintf("REDIS_WAIT_REPLICAS=%d", c.wait)
	res := Result{Run: t.Name(), Scenario: "Redis failover", Transport: transport, Mode: mode,
		Fault: "Redis master (append-only file; its replica replicating over a link 20 ms slow) killed (SIGKILL) a third of the way in, " +
			"its replica promoted (REPLICAOF NO ONE) 2 s later and the link moved to it, the old master back as its replica 5 s after that; " +
			"recovery from the link moving until the ledger's charges next grew",
		Sent: sent, Unique: len(ids), Figures: f, Recovery: fo.resumed, PeakRSS: row.PeakRSS()}
	res.Verdict = verdict(t, setup, len(ids), f, err)
	res.Risk = riskFailover
	t.Logf("%s: sent %d, %+v, doubles %d, resumed %v after the link moved, old master a replica again %v after it; "+
		"completions that failed: %d, of them not replicated: %d",
		t.Name(), sent, f, f.Doubles(), fo.resumed, fo.rejoined,
		logCount(row, "completing key failed"), logCount(row, "too few replicas acknowledged"))
	record(res)
}

// failoverTimes is what a failover measured.
type failoverTimes struct {
	resumed  time.Duration // from the link moving until the ledger's charges next grew; 0 when nothing was left
	rejoined time.Duration // from the link moving until the old master was an online replica again
}

// failover waits until a third of unique requests are charged, then kills
// master, promotes replica, moves link to it and, rejoinAfter later,
// starts master again as replica's replica and waits until it is online.
func failover(row *Row, unique int, master, replica *testenv.RedisProcess, link *Link) (failoverTimes, error) {
	var ft failoverTimes
	deadline := time.Now().Add(2 * time.Minute)
	for f, _ := row.Ledger(); f.Charges.IDs < int64(unique/3); f, _ = row.Ledger() {
		if time.Now().After(deadline) {
			return ft, fmt.Errorf("%w: %d of %d requests charged before the failover", ErrStalled, f.Charges.IDs, unique)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	master.Stop() // SIGKILL
	time.Sleep(downAfter)
	promoted := replica.Client(row.t)
	if err := promoted.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		return ft, fmt.Errorf("promoting the replica: %w", err)
	}
	before, _ := row.Ledger()
	if err := link.Retarget(replica.Addr()); err != nil {
		return ft, fmt.Errorf("moving the link to the promoted replica: %w", err)
	}
	moved := time.Now()
	rejoined := make(chan error, 1)
	go func() {
		time.Sleep(rejoinAfter)
		err := rejoin(ctx, master, replica)
		ft.rejoined = time.Since(moved)
		rejoined <- err
	}()
	for time.Since(moved) < time.Minute {
		f, err := row.Ledger()
		if err == nil && f.Charges.Rows > before.Charges.Rows {
			ft.resumed = time.Since(moved)
			break
		}
		if err == nil && f.Charges.IDs >= int64(unique) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return ft, <-rejoined
}

// rejoin starts the old master again, on its append-only file, and makes
// it a replica of the new one, as Sentinel does with a master that comes
// back; it returns once the new master counts it online, so that WAIT
// counts it.
func rejoin(ctx context.Context, old, master *testenv.RedisProcess) error {
	if err := old.Restart(); err != nil {
		return fmt.Errorf("starting the old master again: %w", err)
	}
	host, port, _ := strings.Cut(master.Addr(), ":")
	c := redis.NewClient(&redis.Options{Addr: old.Addr()})
	defer c.Close()
	if err := c.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		return fmt.Errorf("making the old master a replica: %w", err)
	}
	return replicaOnline(ctx, master)
}

// replicaOnline waits until master counts a replica online.
func replicaOnline(ctx context.Context, master *testenv.RedisProcess) error {
	m := redis.NewClient(&redis.Options{Addr: master.Addr()})
	defer m.Close()
	for {
		info, err := m.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, ",state=online,") {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("no replica of %s online", master.Addr()), err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// logCount is how many lines of the row's instances' logs contain s.
func logCount(row *Row, s string) int {
	n := 0
	for _, i := range row.Instances {
		if b, err := os.ReadFile(i.LogPath); err == nil {
			n += strings.Count(string(b), s)
		}
	}
	return n
}
