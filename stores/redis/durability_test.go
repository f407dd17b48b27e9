package redisstore_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/internal/testenv"
	redisstore "github.com/onceflow/onceflow/stores/redis"
)

// TestInspect starts a Redis of its own for each setting under test and
// checks the verdicts and the one-line warning.
func TestInspect(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		args       []string
		appendOnly redisstore.State
		policy     redisstore.State
		warning    []string // substrings of Warning; none means no warning
	}{{
		name: "no persistence", args: []string{"--save", "", "--appendonly", "no"},
		appendOnly: redisstore.AtRisk, policy: redisstore.OK,
		warning: []string{`redis records can be forgotten: appendonly=no and save=""`, "a restart loses every record", "set appendonly yes"},
	}, {
		name: "RDB only", args: []string{"--save", "60 1", "--appendonly", "no"},
		appendOnly: redisstore.AtRisk, policy: redisstore.OK,
		warning: []string{`appendonly=no and save="60 1"`, "RDB snapshots only", "since the last snapshot", "set appendonly yes"},
	}, {
		name: "as docker-compose.yml runs it", args: []string{"--appendonly", "yes", "--appendfsync", "everysec", "--maxmemory-policy", "noeviction"},
		appendOnly: redisstore.OK, policy: redisstore.OK,
	}, {
		name: "allkeys-lru", args: []string{"--appendonly", "yes", "--maxmemory-policy", "allkeys-lru"},
		appendOnly: redisstore.OK, policy: redisstore.AtRisk,
		warning: []string{"maxmemory-policy=allkeys-lru (records are evicted under memory pressure", "set maxmemory-policy noeviction"},
	}, {
		name: "volatile-ttl and nothing persisted", args: []string{"--save", "", "--maxmemory-policy", "volatile-ttl"},
		appendOnly: redisstore.AtRisk, policy: redisstore.AtRisk,
		warning: []string{`appendonly=no and save=""`, "maxmemory-policy=volatile-ttl (every record has a TTL", "set appendonly yes and maxmemory-policy noeviction"},
	}, {
		name: "CONFIG renamed", args: []string{"--save", "", "--rename-command", "CONFIG", ""},
		appendOnly: redisstore.Unknown, policy: redisstore.Unknown,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := testenv.RedisServer(t, tc.args...)
			d, err := redisstore.Inspect(testCtx(t), srv.Client(t))
			if err != nil {
				t.Fatal(err)
			}
			if d.AppendOnly.State != tc.appendOnly || d.MaxmemoryPolicy.State != tc.policy {
				t.Fatalf("Inspect = %+v, want appendonly %s and maxmemory-policy %s", d, tc.appendOnly, tc.policy)
			}
			w := d.Warning()
			if len(tc.warning) == 0 && w != "" {
				t.Fatalf("Warning() = %q, want none", w)
			}
			for _, want := range tc.warning {
				if !strings.Contains(w, want) {
					t.Errorf("Warning() = %q, want it to contain %q", w, want)
				}
			}
			if strings.Contains(w, "\n") {
				t.Errorf("Warning() spans lines: %q", w)
			}
			unchecked := tc.appendOnly == redisstore.Unknown
			if got := d.Unchecked(); (got != "") != unchecked || unchecked && !strings.Contains(got, "unknown command") {
				t.Errorf("Unchecked() = %q", got)
			}
			// RequireDurable refuses exactly what Warning warns of, in its words.
			err = redisstore.RequireDurable(testCtx(t), srv.Client(t))
			if len(tc.warning) == 0 && err != nil || len(tc.warning) > 0 && (!errors.Is(err, redisstore.ErrForgetful) || err.Error() != w) {
				t.Errorf("RequireDurable = %v, want nil or the warning %q", err, w)
			}
		})
	}
}

// TestInspectDeniedByACL: a user whose ACL denies CONFIG gets Unknown
// verdicts, not an error.
func TestInspectDeniedByACL(t *testing.T) {
	t.Parallel()
	srv := testenv.RedisServer(t)
	ctx := testCtx(t)
	if err := srv.Client(t).Do(ctx, "ACL", "SETUSER", "app", "on", ">secret", "~*", "+@all", "-config").Err(); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "app", Password: "secret"})
	t.Cleanup(func() { _ = c.Close() })
	d, err := redisstore.Inspect(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range d.Verdicts() {
		if v.State != redisstore.Unknown || !strings.Contains(v.Value, "NOPERM") {
			t.Errorf("%s: %+v, want Unknown for NOPERM", v.Setting, v)
		}
	}
	if d.Warning() != "" {
		t.Errorf("Warning() = %q, want none", d.Warning())
	}
}

// TestInspectCluster judges every master: the test cluster persists
// nothing, and the warning names the master it found it on.
func TestInspectCluster(t *testing.T) {
	t.Parallel()
	c := testenv.RedisCluster(t)
	d, err := redisstore.Inspect(testCtx(t), c)
	if err != nil {
		t.Fatal(err)
	}
	masters := slotOwners(t, c)
	if d.AppendOnly.State != redisstore.AtRisk || !slices.Contains(valuesOf(masters), d.AppendOnly.Node) {
		t.Fatalf("AppendOnly = %+v, want AtRisk on one of the masters", d.AppendOnly)
	}
	if w := d.Warning(); !strings.Contains(w, `save="" on `+d.AppendOnly.Node) {
		t.Fatalf("Warning() = %q, want the node named", w)
	}
}

func valuesOf(m map[int64]string) []string {
	var vs []string
	for _, v := range m {
		vs = append(vs, v)
	}
	return vs
}

// TestInspectUnreachableIsAnError: a server that cannot be reached is an
// error, not an unknown verdict.
func TestInspectUnreachableIsAnError(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: testenv.ClosedAddr(t), DialTimeout: time.Second, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	_, err := redisstore.Inspect(testCtx(t), c)
	var refused redis.Error
	if err == nil || errors.As(err, &refused) {
		t.Fatalf("Inspect of a closed port: %v, want a connection error", err)
	}
}
