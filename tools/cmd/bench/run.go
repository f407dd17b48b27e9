package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/onceflow/onceflow/tools/internal/bench"
)

// config is the command line.
type config struct {
	size        bench.Size
	out         string
	redisAddr   string
	postgresURL string
	amqpURL     string
	natsURL     string
	command     string
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	size := fs.String("size", string(bench.Short), "tiny, short or full")
	out := fs.String("out", "", "write the markdown report here, and the plot beside it")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	z, err := bench.ParseSize(*size)
	if err != nil {
		return config{}, err
	}
	return config{
		size:        z,
		out:         *out,
		redisAddr:   getenv("TEST_REDIS_ADDR", "127.0.0.1:6379"),
		postgresURL: getenv("TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"),
		amqpURL:     getenv("TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/"),
		natsURL:     getenv("TEST_NATS_URL", "nats://127.0.0.1:4222"),
		command:     strings.TrimSpace("cd tools && go run ./cmd/bench " + strings.Join(args, " ")),
	}, nil
}

// run runs the plan: tables and progress to stdout, TARGET lines last.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	tools := bench.Tools{}
	if err := tools.Check(); err != nil {
		return err
	}
	env, err := bench.OpenEnv(ctx, bench.EnvConfig{RedisAddr: cfg.redisAddr, PostgresURL: cfg.postgresURL})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, env.Close()) }()

	deps := bench.Deps{Env: env, Tools: tools}
	plan := bench.NewPlan(cfg.size, deps)
	closeFlows, err := extend(ctx, plan, deps, brokers{amqp: cfg.amqpURL, nats: cfg.natsURL, redisStream: "redis://" + cfg.redisAddr + "/0"})
	defer func() { err = errors.Join(err, closeFlows()) }()
	if err != nil {
		return err
	}
	rep, runErr := plan.Run(ctx, stdout)
	if cfg.out != "" {
		if err := writeReport(ctx, cfg, env, rep); err != nil {
			runErr = errors.Join(runErr, err)
		}
	}
	fmt.Fprintf(stdout, "== targets (%s, %s)\n", cfg.size, rep.Elapsed.Round(1e9))
	rep.WriteTargets(stdout)
	return runErr
}

// writeReport writes the markdown report and, beside it, the plot of each
// sweep that has one (see bench.PlotFile).
func writeReport(ctx context.Context, cfg config, env *bench.Env, rep *bench.Report) error {
	if err := os.MkdirAll(filepath.Dir(cfg.out), 0o755); err != nil {
		return err
	}
	meta := bench.Meta{Command: cfg.command, Machine: bench.DescribeMachine(ctx, env), Plots: map[string]string{}}
	for _, s := range rep.Sweeps {
		if s.Plot == "" || s.Err != nil {
			continue
		}
		name := bench.PlotFile(s.Name)
		if err := bench.WritePlot(s, s.Plot, filepath.Join(filepath.Dir(cfg.out), name)); err != nil {
			return err
		}
		meta.Plots[s.Name] = name
	}
	f, err := os.Create(cfg.out)
	if err != nil {
		return err
	}
	if err := rep.WriteMarkdown(f, meta); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func getenv(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
