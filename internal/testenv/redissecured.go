package testenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SecuredRedis is a redis-server of a test's own that requires a password
// and, started with certificates, TLS on its only port.
type SecuredRedis struct {
	Addr     string
	Password string
	TLS      *TLSFiles // nil: plaintext
}

// URL is the server's URL without its password: rediss:// over TLS.
func (s SecuredRedis) URL() string {
	if s.TLS != nil {
		return "rediss://" + s.Addr + "/0"
	}
	return "redis://" + s.Addr + "/0"
}

// Options are a client's options that authenticate and, over TLS, trust
// the test's CA.
func (s SecuredRedis) Options() *redis.Options {
	opts := &redis.Options{Addr: s.Addr, Password: s.Password, MaxRetries: -1}
	if s.TLS != nil {
		pem, _ := os.ReadFile(s.TLS.CAFile)
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		opts.TLSConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return opts
}

// RedisSecured starts a redis-server on a free loopback port that requires
// password and, with certs, TLS (no plaintext port), and stops it when t
// ends. With cluster it is a Redis Cluster of that one node, serving every
// slot. Without redis-server on PATH, t is skipped, or failed under
// REQUIRE_SERVICES=1.
func RedisSecured(t testing.TB, password string, certs *TLSFiles, cluster bool) SecuredRedis {
	t.Helper()
	Integration(t)
	server, err := exec.LookPath("redis-server")
	if err != nil {
		Unreachable(t, redisServerService, "127.0.0.1", err)
	}
	dir := t.TempDir()
	ports, err := FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	s := SecuredRedis{Addr: "127.0.0.1:" + strconv.Itoa(ports[0]), Password: password, TLS: certs}
	args := []string{"--requirepass", password, "--masterauth", password, "--save", "", "--appendonly", "no"}
	if certs != nil {
		// The command line's later options win: the plaintext port is off.
		args = append(args, "--port", "0", "--tls-port", strconv.Itoa(ports[0]),
			"--tls-cert-file", certs.CertFile, "--tls-key-file", certs.KeyFile, "--tls-ca-cert-file", certs.CAFile,
			"--tls-auth-clients", "no", "--tls-cluster", "yes", "--tls-replication", "yes")
	}
	if cluster {
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-announce-ip", "127.0.0.1",
			"--cluster-port", strconv.Itoa(ports[1]))
	}
	n, err := startRedisServer(server, dir, ports[0], args...)
	if err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	t.Cleanup(n.stop)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := redis.NewClient(s.Options())
	defer c.Close()
	err = poll(ctx, n, func() error { return c.Ping(ctx).Err() })
	if err == nil && cluster {
		err = c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err()
		if err == nil {
			err = poll(ctx, n, func() error {
				info, err := c.ClusterInfo(ctx).Result()
				if err == nil && !strings.Contains(info, "cluster_state:ok") {
					err = errors.New("cluster not ok")
				}
				return err
			})
		}
	}
	if err != nil {
		log, _ := os.ReadFile(n.log)
		t.Fatalf("redis-server with a password (TLS %t, cluster %t): %v\n%s", certs != nil, cluster, err, log)
	}
	return s
}

// String describes the server for test names.
func (s SecuredRedis) String() string { return fmt.Sprintf("%s (TLS %t)", s.Addr, s.TLS != nil) }
