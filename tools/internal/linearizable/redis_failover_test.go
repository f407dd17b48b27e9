package linearizable_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/tools/internal/linearizable"
)

// failoverCluster is a Redis Cluster of the test's own whose three masters
// each have a replica, so that a master can hand its slots over.
type failoverCluster struct {
	nodes  []*testenv.RedisProcess
	client *redis.ClusterClient
}

// replicatedCluster starts six nodes with append-only files and makes them
// a cluster of three masters and three replicas. Without redis-cli the
// test is skipped (or failed under REQUIRE_SERVICES=1).
func replicatedCluster(t *testing.T) *failoverCluster {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		testenv.Unreachable(t, "redis-cli", "PATH", err)
	}
	c := &failoverCluster{}
	var addrs []string
	for range 6 {
		// The bus port is given: the default, port+10000, may not exist
		// for a port the kernel picked.
		bus, err := testenv.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		_, busPort, _ := net.SplitHostPort(bus)
		n := testenv.RedisServer(t, "--cluster-enabled", "yes", "--cluster-port", busPort,
			"--cluster-node-timeout", "2000", "--appendonly", "yes", "--appendfsync", "always")
		c.nodes = append(c.nodes, n)
		addrs = append(addrs, n.Addr())
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.waitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	// The client follows MOVED after a failover, and would also resend a
	// call after a network error (MaxRedirects), which could run it twice;
	// a manual failover breaks no connection, so none is resent.
	c.client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { _ = c.client.Close() })
	return c
}

// failover makes every replica take its master's place with CLUSTER
// FAILOVER: a manual failover, in which the master stops writes until the
// replica has caught up, so no acknowledged write is lost.
func (c *failoverCluster) failover() linearizable.Fault {
	return linearizable.Fault{
		Name: "every replica takes over its master (CLUSTER FAILOVER)", Start: 2 * time.Second, Every: 5 * time.Second,
		Inject: func(ctx context.Context) error {
			var promoted []*testenv.RedisProcess
			for _, n := range c.nodes {
				if role, err := c.role(ctx, n); err != nil {
					return err
				} else if role != "slave" {
					continue
				}
				if err := c.do(ctx, n, "CLUSTER", "FAILOVER"); err != nil {
					return fmt.Errorf("CLUSTER FAILOVER on %s: %w", n.Addr(), err)
				}
				promoted = append(promoted, n)
			}
			// CLUSTER FAILOVER answers at once; the failover follows.
			for _, n := range promoted {
				for {
					role, err := c.role(ctx, n)
					if err != nil {
						return err
					}
					if role == "master" {
						break
					}
					select {
					case <-ctx.Done():
						return fmt.Errorf("replica %s not promoted: %w", n.Addr(), ctx.Err())
					case <-time.After(20 * time.Millisecond):
					}
				}
			}
			return c.waitHealthy(ctx)
		},
	}
}

// waitHealthy waits until every node sees the cluster whole and every
// master has a replica in sync.
func (c *failoverCluster) waitHealthy(ctx context.Context) error {
	for {
		err := c.healthy(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the cluster: %w (last: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *failoverCluster) healthy(ctx context.Context) error {
	masters := 0
	for _, n := range c.nodes {
		cl := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
		info, err := cl.ClusterInfo(ctx).Result()
		repl, rerr := cl.Info(ctx, "replication").Result()
		_ = cl.Close()
		switch {
		case err != nil || rerr != nil:
			return fmt.Errorf("node %s: %v %v", n.Addr(), err, rerr)
		case !strings.Contains(info, "cluster_state:ok"):
			return fmt.Errorf("node %s: cluster not ok", n.Addr())
		case strings.Contains(repl, "role:master"):
			masters++
			if !strings.Contains(repl, "connected_slaves:1") || !strings.Contains(repl, ",state=online,") {
				return fmt.Errorf("master %s: replica not online", n.Addr())
			}
		case !strings.Contains(repl, "master_link_status:up"):
			return fmt.Errorf("replica %s: link to its master down", n.Addr())
		}
	}
	if masters != 3 {
		return fmt.Errorf("%d masters, want 3", masters)
	}
	return nil
}

func (c *failoverCluster) role(ctx context.Context, n *testenv.RedisProcess) (string, error) {
	cl := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
	defer cl.Close()
	r, err := cl.Do(ctx, "ROLE").Slice()
	if err != nil || len(r) == 0 {
		return "", fmt.Errorf("ROLE on %s: %v", n.Addr(), err)
	}
	return fmt.Sprint(r[0]), nil
}

func (c *failoverCluster) do(ctx context.Context, n *testenv.RedisProcess, args ...any) error {
	cl := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
	defer cl.Close()
	return cl.Do(ctx, args...).Err()
}
