package redisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/internal/testenv"
	redisstore "github.com/onceflow/onceflow/stores/redis"
)

// TestCheckVersionPassesTheTestServers checks that the servers the tests
// run, a node and a Cluster, pass the store's version check.
func TestCheckVersionPassesTheTestServers(t *testing.T) {
	t.Parallel()
	if err := redisstore.CheckVersion(t.Context(), testenv.Redis(t)); err != nil {
		t.Errorf("CheckVersion on the test server: %v", err)
	}
	if err := redisstore.CheckVersion(t.Context(), testenv.RedisCluster(t)); err != nil {
		t.Errorf("CheckVersion on the test cluster: %v", err)
	}
}

// TestCheckVersionRefusesNothingWhenINFOIsDenied checks the store's
// version check as the ACL user docs/deploying.md sets up sees it:
// without @dangerous, INFO is denied, and the check refuses nothing.
func TestCheckVersionRefusesNothingWhenINFOIsDenied(t *testing.T) {
	t.Parallel()
	srv := testenv.RedisServer(t)
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = admin.Close() })
	if err := admin.Do(t.Context(), "ACL", "SETUSER", "onceflow", "on", ">s3cret-pass", "~onceflow:*", "+@all", "-@dangerous").Err(); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "onceflow", Password: "s3cret-pass"})
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Info(t.Context(), "server").Err(); err == nil {
		t.Fatal("INFO answered the ACL user: the test checks nothing")
	}
	if err := redisstore.CheckVersion(t.Context(), c); err != nil {
		t.Errorf("CheckVersion with INFO denied: %v, want nil", err)
	}
}
