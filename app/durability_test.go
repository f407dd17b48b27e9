package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
)

// TestRedisDurabilityGuard starts the service on Redis servers of the
// test's own with the settings under test: each setting's verdict is a
// gauge on /metrics, records at risk are one warning line, and
// REDIS_REQUIRE_DURABLE=true turns that line into the start-up error.
func TestRedisDurabilityGuard(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		args       []string
		require    bool
		refused    []string // substrings of the start-up error; none: it starts
		warning    string   // substring of the one warning; "": none
		appendOnly string   // state of each setting's gauge
		policy     string
	}{{
		name: "nothing persisted", args: []string{"--save", "", "--appendonly", "no"},
		warning:    `redis records can be forgotten: appendonly=no and save="" (nothing is persisted: a restart loses every record`,
		appendOnly: "at_risk", policy: "ok",
	}, {
		name: "nothing persisted, durability required", args: []string{"--save", "", "--appendonly", "no"}, require: true,
		refused: []string{`redis records can be forgotten: appendonly=no and save=""`, "set appendonly yes", "(REDIS_REQUIRE_DURABLE=true)"},
	}, {
		name: "evicting, durability required", args: []string{"--appendonly", "yes", "--maxmemory-policy", "allkeys-lru"}, require: true,
		refused: []string{"maxmemory-policy=allkeys-lru (records are evicted under memory pressure", "set maxmemory-policy noeviction"},
	}, {
		name: "as docker-compose.yml runs it, durability required", args: composeRedisArgs(t), require: true,
		appendOnly: "ok", policy: "ok",
	}, {
		name: "CONFIG renamed, durability required", args: []string{"--appendonly", "yes", "--rename-command", "CONFIG", ""}, require: true,
		warning:    "could not check whether redis can forget records (appendonly, maxmemory-policy): CONFIG GET appendonly: ERR unknown command",
		appendOnly: "unknown", policy: "unknown",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := testenv.RedisServer(t, tc.args...)
			environ := []string{"HTTP_ADDR=127.0.0.1:0", "API_KEYS=key-of-client-a-0123456789:client-a", "STORE=redis", "REDIS_URL=redis://" + srv.Addr() + "/0"}
			if tc.require {
				environ = append(environ, "REDIS_REQUIRE_DURABLE=true")
			}
			cfg, err := LoadConfig(environ)
			if err != nil {
				t.Fatal(err)
			}
			var logs testenv.Buffer
			a, err := New(context.Background(), cfg, testdomain.Domain().WithEnviron(environ), slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
			if len(tc.refused) > 0 {
				if err == nil {
					_ = a.Close()
					t.Fatal("New started, want it to refuse")
				}
				for _, want := range tc.refused {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("New: %v, want it to contain %q", err, want)
					}
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("New's error spans lines: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r := run(t, a)
			warnings := messages(t, logs.String())
			switch {
			case tc.warning == "" && len(warnings) > 0:
				t.Errorf("warnings: %q, want none", warnings)
			case tc.warning != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], tc.warning)):
				t.Errorf("warnings: %q, want one containing %q", warnings, tc.warning)
			}
			for setting, want := range map[string]string{"appendonly": tc.appendOnly, "maxmemory-policy": tc.policy} {
				for _, state := range []string{"ok", "at_risk", "unknown"} {
					got := r.Metric(t, "onceflow_store_durability", "setting", setting, "state", state)
					if wantOne := state == want; got != map[bool]float64{true: 1, false: 0}[wantOne] {
						t.Errorf(`onceflow_store_durability{setting=%q,state=%q} = %v, want state %s`, setting, state, got, want)
					}
				}
			}
		})
	}
}

// TestWaitReplicasProcessesOnce runs the service with REDIS_WAIT_REPLICAS=1
// on a master with one replica: a request sent twice is charged once, and
// the replica holds the completed records.
func TestWaitReplicasProcessesOnce(t *testing.T) {
	t.Parallel()
	master := testenv.RedisServer(t, "--appendonly", "yes", "--repl-diskless-sync-delay", "0")
	replica := testenv.RedisReplica(t, master, "--appendonly", "yes")
	r := startApp(t, "STORE=redis", "REDIS_URL=redis://"+master.Addr()+"/0", "REDIS_WAIT_REPLICAS=1", "REDIS_WAIT_TIMEOUT=5s")
	id := "req-wait-" + testenv.NewID()[:8]
	for range 2 {
		flowtest.PostOK(t, r, id)
	}
	waitFor(t, "the request noticed", func() bool { return flowtest.Tally(t, r).Notices.Rows == 1 })
	if s := flowtest.Tally(t, r); s.Charges.Rows != 1 {
		t.Fatalf("tally %+v, want 1 charge", s)
	}
	if n := r.Metric(t, "onceflow_receiver_outcomes_total", "outcome", "store_error"); n != 0 {
		t.Fatalf("%v store errors, want none", n)
	}
	keys, err := replica.Client(t).Keys(context.Background(), "onceflow:idem:*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("records on the replica: %v, %v", keys, err)
	}
}

// composeRedisArgs returns the arguments docker-compose.yml gives
// redis-server, from the redis service's command (a flow sequence, which
// is JSON).
func composeRedisArgs(t *testing.T) []string {
	t.Helper()
	compose, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^  redis:\n(?:    .*\n)*?    command: (\[.*\])$`).FindSubmatch(compose)
	var command []string
	if m == nil || json.Unmarshal(m[1], &command) != nil || len(command) < 2 || command[0] != "redis-server" {
		t.Fatalf("docker-compose.yml: no redis-server command in the redis service (found %q)", m)
	}
	return command[1:]
}

// messages returns the msg of each line that slog's JSON handler wrote.
func messages(t *testing.T, logs string) []string {
	t.Helper()
	var msgs []string
	for line := range strings.Lines(logs) {
		var rec struct{ Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		msgs = append(msgs, rec.Msg)
	}
	return msgs
}
