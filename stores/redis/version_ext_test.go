package redisstore_test

import (
	"testing"

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
