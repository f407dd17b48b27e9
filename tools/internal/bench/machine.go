package bench

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"strings"
)

// Machine describes where a run happened.
type Machine struct {
	CPU      string // model name from /proc/cpuinfo, or GOARCH
	Cores    int
	OS       string
	Go       string
	Redis    string
	Postgres string
}

// DescribeMachine reads the CPU model and the versions of Go and of the
// env's servers. A version it cannot read is "unknown".
func DescribeMachine(ctx context.Context, env *Env) Machine {
	m := Machine{CPU: runtime.GOARCH, Cores: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH,
		Go: runtime.Version(), Redis: "unknown", Postgres: "unknown"}
	if model := cpuModel(); model != "" {
		m.CPU = model
	}
	if info, err := env.Redis.Info(ctx, "server").Result(); err == nil {
		for line := range strings.SplitSeq(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
				m.Redis = v
			}
		}
	}
	var v string
	if err := env.Postgres.QueryRow(ctx, "SHOW server_version").Scan(&v); err == nil {
		m.Postgres = v
	}
	return m
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
