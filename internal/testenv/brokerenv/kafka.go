package brokerenv

import (
	"crypto/tls"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv/kfakebroker"
)

// KafkaBrokersEnv names the variable that points tests at an existing Kafka
// cluster: comma-separated host:port bootstrap addresses.
const KafkaBrokersEnv = "TEST_KAFKA_BROKERS"

// kafkaService names Kafka in skip and failure messages; kafkaHow tells
// how to provide it.
const (
	kafkaService = "Kafka"
	kafkaHow     = "set " + KafkaBrokersEnv + " to a running cluster (`make up` starts one)"
)

// kafka is the in-process cluster shared by the tests of this process.
var kafka struct {
	mu      sync.Mutex
	started bool // a start was attempted; err holds its failure
	err     error
	cluster *kfake.Cluster
}

// Kafka returns the bootstrap addresses of a Kafka cluster. Tests must give
// their topics and consumer groups names of their own (see
// [testenv.NewID]): the cluster is shared.
//
// With TEST_KAFKA_BROKERS set it uses that cluster, after checking that it
// answers. Otherwise it starts one in-process Kafka-protocol broker (kfake,
// from franz-go, through package kfakebroker) on a free loopback port, once
// per test process; clients talk to it over TCP like to a real broker. The
// package's TestMain must then call StopKafka after m.Run. If the cluster
// cannot be reached or started, t is skipped, or failed under
// REQUIRE_SERVICES=1 (see [testenv.Unreachable]). Under -short it is
// skipped without starting anything (see [testenv.Integration]).
func Kafka(t testing.TB) []string {
	t.Helper()
	testenv.Integration(t)
	if v := testenv.Getenv(KafkaBrokersEnv, ""); v != "" {
		brokers := strings.Split(v, ",")
		if err := pingKafka(brokers); err != nil {
			testenv.UnreachableHow(t, kafkaService, v, err, kafkaHow)
		}
		return brokers
	}
	kafka.mu.Lock()
	defer kafka.mu.Unlock()
	if !kafka.started {
		kafka.started = true
		kafka.cluster, kafka.err = kfakebroker.NewCluster("127.0.0.1:0", "onceflow-test")
	}
	if kafka.err != nil {
		testenv.UnreachableHow(t, kafkaService, "127.0.0.1 (kfake started by the test)", kafka.err, kafkaHow)
	}
	return kafka.cluster.ListenAddrs()
}

// StopKafka stops the cluster Kafka started, if any. Call it from TestMain
// after m.Run. It does nothing for a cluster named by TEST_KAFKA_BROKERS or
// when none was started.
func StopKafka() {
	kafka.mu.Lock()
	defer kafka.mu.Unlock()
	if kafka.cluster != nil {
		kafka.cluster.Close()
	}
	kafka.started, kafka.err, kafka.cluster = false, nil, nil
}

// pingKafka fetches the cluster's metadata once.
func pingKafka(brokers []string) error {
	cfg := sarama.NewConfig()
	cfg.Net.DialTimeout = 5 * time.Second
	cfg.Metadata.Timeout = 10 * time.Second
	c, err := sarama.NewClient(brokers, cfg)
	if err != nil {
		return fmt.Errorf("fetching metadata: %w", err)
	}
	return c.Close()
}

// WaitKafkaGroup waits up to 20 seconds until consumer group is stable
// with n members on the cluster of brokers, each then holding its share of
// the partitions: messages published next are spread over all of them.
func WaitKafkaGroup(t testing.TB, brokers []string, group string, n int) {
	t.Helper()
	admin, err := sarama.NewClusterAdmin(brokers, sarama.NewConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	waitGroup(t, admin, group, fmt.Sprintf("group %s stable with %d members", group, n), func(g *sarama.GroupDescription) bool {
		return g.State == "Stable" && len(g.Members) == n
	})
}

// waitGroup waits up to 20 seconds until the description of group
// satisfies ok, failing t with what otherwise.
func waitGroup(t testing.TB, admin sarama.ClusterAdmin, group, what string, ok func(*sarama.GroupDescription) bool) {
	t.Helper()
	testenv.WaitFor(t, 20*time.Second, what, func() bool {
		gs, err := admin.DescribeConsumerGroups([]string{group})
		return err == nil && len(gs) == 1 && ok(gs[0])
	})
}

// KafkaSecured starts a Kafka-protocol broker of the test's own (kfake, in
// process) that requires SASL with mechanism (PLAIN, SCRAM-SHA-256 or
// SCRAM-SHA-512) and the given user and password, over TLS with
// serverTLS when it is not nil, and stops it when t ends. It returns its
// address. Under -short t is skipped.
func KafkaSecured(t testing.TB, mechanism, user, password string, serverTLS *tls.Config) []string {
	t.Helper()
	testenv.Integration(t)
	opts := []kfake.Opt{kfake.EnableSASL(), kfake.Superuser(mechanism, user, password)}
	if serverTLS != nil {
		opts = append(opts, kfake.TLS(serverTLS))
	}
	c, err := kfakebroker.NewCluster("127.0.0.1:0", "onceflow-test-secured-"+testenv.NewID(), opts...)
	if err != nil {
		t.Fatalf("starting kfake with SASL %s: %v", mechanism, err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}
