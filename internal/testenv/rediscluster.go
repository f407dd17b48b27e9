package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisClusterService names the cluster in skip and failure messages.
const redisClusterService = "Redis Cluster"

// RedisClusterAddrsEnv names the variable that points tests at an existing
// Redis Cluster: comma-separated host:port seed addresses.
const RedisClusterAddrsEnv = "TEST_REDIS_CLUSTER_ADDRS"

// redisClusterStartTimeout bounds starting the local cluster, from launching
// the nodes to a cluster that serves every slot.
const redisClusterStartTimeout = 30 * time.Second

// cluster is the Redis Cluster shared by the tests of this process.
var cluster struct {
	mu      sync.Mutex
	started bool // a start was attempted; err holds its failure
	err     error
	local   *localCluster
}

// RedisCluster returns a client of a 3-master Redis Cluster, closed when t
// ends. Tests must scope their keys with KeyPrefix(t): the cluster is shared.
//
// With TEST_REDIS_CLUSTER_ADDRS set it connects to that cluster. Otherwise it
// starts one on loopback, once per test process, from the redis-server and
// redis-cli on PATH; the package's TestMain must then call StopRedisCluster
// after m.Run. If the cluster cannot be reached or started, t is skipped, or
// failed under REQUIRE_SERVICES=1 (see Unreachable). Under -short it is
// skipped without starting anything (see Integration).
func RedisCluster(t testing.TB) *redis.ClusterClient {
	t.Helper()
	Integration(t)
	addrs, where, err := redisClusterAddrs(t)
	if err != nil {
		Unreachable(t, redisClusterService, where, err)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		return n.Ping(ctx).Err()
	}); err != nil {
		_ = c.Close()
		Unreachable(t, redisClusterService, where, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// StopRedisCluster stops the cluster RedisCluster started, if any, and
// removes its files. Call it from TestMain after m.Run. It does nothing for a
// cluster named by TEST_REDIS_CLUSTER_ADDRS or when none was started.
func StopRedisCluster() {
	cluster.mu.Lock()
	defer cluster.mu.Unlock()
	if cluster.local != nil {
		cluster.local.stop()
	}
	cluster.started, cluster.err, cluster.local = false, nil, nil
}

// redisClusterAddrs returns the seed addresses of the cluster, starting the
// local one on first use, and how to name the cluster in messages.
func redisClusterAddrs(t testing.TB) ([]string, string, error) {
	if v := Getenv(RedisClusterAddrsEnv, ""); v != "" {
		return strings.Split(v, ","), v, nil
	}
	const where = "127.0.0.1 (redis-server started by the test)"
	cluster.mu.Lock()
	defer cluster.mu.Unlock()
	if !cluster.started {
		cluster.started = true
		begin := time.Now()
		cluster.local, cluster.err = startLocalCluster()
		if cluster.err == nil {
			t.Logf("started Redis Cluster %v in %v", cluster.local.addrs, time.Since(begin).Round(time.Millisecond))
		}
	}
	if cluster.err != nil {
		return nil, where, cluster.err
	}
	return cluster.local.addrs, where, nil
}

// localCluster is a cluster of redis-server processes this process started.
type localCluster struct {
	dir   string
	addrs []string
	nodes []*node
}

// errNodeExited marks a start that failed because a node quit, most likely
// because another process took its port first; such starts are retried.
var errNodeExited = errors.New("redis-server exited")

func startLocalCluster() (*localCluster, error) {
	server, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, err
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		lc, err := tryStartLocalCluster(server, cli)
		if err == nil || !errors.Is(err, errNodeExited) || attempt == 3 {
			return lc, err
		}
	}
}

func tryStartLocalCluster(server, cli string) (_ *localCluster, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), redisClusterStartTimeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "onceflow-redis-cluster-")
	if err != nil {
		return nil, err
	}
	lc := &localCluster{dir: dir}
	defer func() {
		if err != nil {
			lc.stop()
		}
	}()

	// Three client ports and three cluster bus ports. The bus port is set
	// explicitly because the default (port+10000) may not exist for a port
	// the kernel picked.
	ports, err := FreePorts(6)
	if err != nil {
		return nil, err
	}
	for i := range 3 {
		n, err := startNode(server, dir, ports[i], ports[3+i])
		if err != nil {
			return nil, err
		}
		lc.nodes = append(lc.nodes, n)
		lc.addrs = append(lc.addrs, n.addr)
	}
	for _, n := range lc.nodes {
		if err := n.waitReady(ctx); err != nil {
			return nil, err
		}
	}

	args := append([]string{"--cluster", "create"}, lc.addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("redis-cli --cluster create: %w\n%s", err, out)
	}
	if err := lc.waitServing(ctx); err != nil {
		return nil, err
	}
	return lc, nil
}

// startNode starts one cluster node: a redis-server without persistence
// on port, with its cluster bus on busPort.
func startNode(server, dir string, port, busPort int) (*node, error) {
	p := strconv.Itoa(port)
	return startRedisServer(server, dir, port,
		"--cluster-enabled", "yes",
		"--cluster-port", strconv.Itoa(busPort),
		"--cluster-config-file", filepath.Join(dir, "nodes-"+p+".conf"),
		"--save", "",
		"--appendonly", "no",
	)
}

// waitServing waits until every node reports a healthy cluster that knows
// all three masters and all slots, and a cluster client can write and read
// keys spread over the slots of every master.
func (lc *localCluster) waitServing(ctx context.Context) error {
	for _, n := range lc.nodes {
		c := redis.NewClient(&redis.Options{Addr: n.addr, MaxRetries: -1})
		err := poll(ctx, n, func() error {
			info, err := c.ClusterInfo(ctx).Result()
			if err != nil {
				return err
			}
			for _, want := range []string{"cluster_state:ok", "cluster_slots_ok:16384", "cluster_known_nodes:3"} {
				if !strings.Contains(info, want+"\r\n") {
					return fmt.Errorf("node %s: no %s yet", n.addr, want)
				}
			}
			return nil
		})
		_ = c.Close()
		if err != nil {
			return err
		}
	}

	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: lc.addrs})
	defer c.Close()
	return poll(ctx, lc.nodes[0], func() error {
		for i := range 256 {
			k := "testenv:probe:" + strconv.Itoa(i)
			if err := c.Set(ctx, k, k, time.Minute).Err(); err != nil {
				return err
			}
			if v, err := c.Get(ctx, k).Result(); err != nil || v != k {
				return fmt.Errorf("reading %s back: %q, %v", k, v, err)
			}
		}
		return nil
	})
}

// poll calls try until it succeeds, n exits or ctx ends.
func poll(ctx context.Context, n *node, try func() error) error {
	for {
		err := try()
		if err == nil {
			return nil
		}
		select {
		case <-n.exited:
			log, _ := os.ReadFile(n.log)
			return fmt.Errorf("%w: node %s: %s", errNodeExited, n.addr, log)
		case <-ctx.Done():
			return fmt.Errorf("waiting for the Redis Cluster: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop kills the nodes, waits for them to exit and removes their files.
func (lc *localCluster) stop() {
	for _, n := range lc.nodes {
		n.stop()
	}
	_ = os.RemoveAll(lc.dir)
}

// ClusterSlots returns the keys on c that match pattern, from every
// master, and the hash slots they are in.
func ClusterSlots(t testing.TB, c *redis.ClusterClient, pattern string) (keys []string, slots map[int64]bool) {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		found, err := n.Keys(ctx, pattern).Result()
		mu.Lock()
		defer mu.Unlock()
		keys = append(keys, found...)
		return err
	})
	if err != nil {
		t.Fatalf("listing the keys %s: %v", pattern, err)
	}
	slots = map[int64]bool{}
	for _, k := range keys {
		slots[c.ClusterKeySlot(ctx, k).Val()] = true
	}
	return keys, slots
}
