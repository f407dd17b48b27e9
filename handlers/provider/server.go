package provider

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/domain"
)

// Server is a Provider serving on an address of its own.
type Server struct {
	*Provider
	listener net.Listener
	server   *http.Server
	served   chan error

	mu     sync.Mutex
	unused map[net.Conn]struct{} // connections no request has come on yet

	closeOnce sync.Once
	closeErr  error
}

// Listen starts a Provider on cfg serving on addr (host:port; port 0
// picks a free one) and returns once it listens. Close stops it.
func Listen(ctx context.Context, addr string, cfg Config) (*Server, error) {
	p, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("payment provider: %w", err)
	}
	s := &Server{Provider: p, listener: ln, served: make(chan error, 1), unused: map[net.Conn]struct{}{}}
	s.server = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second, ConnState: s.track}
	go func() { s.served <- s.server.Serve(ln) }()
	return s, nil
}

// track keeps the connections on which no request has come yet, which a
// client's transport may open ahead of need: Close closes them at once,
// rather than waiting for them as it waits for requests in flight.
func (s *Server) track(c net.Conn, state http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if state == http.StateNew {
		s.unused[c] = struct{}{}
	} else {
		delete(s.unused, c)
	}
}

// URL is the base URL the provider answers at, such as
// http://127.0.0.1:43567.
func (s *Server) URL() string { return "http://" + s.listener.Addr().String() }

// Close stops serving, waiting up to 5 seconds for the requests in flight
// before it closes what is left, then closes the Provider. Calling it
// again returns the same.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		for c := range s.unused {
			_ = c.Close()
		}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := s.server.Shutdown(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			err = s.server.Close()
		}
		if serr := <-s.served; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		s.closeErr = errors.Join(err, s.Provider.Close())
	})
	return s.closeErr
}

// Command is `onceflow provider`: the provider as a service of its own,
// on --addr, its records and charges in PROVIDER_DATABASE_URL's database
// (migrated at start-up) or in memory, until the process is told to stop.
func Command() domain.Command {
	return domain.Command{Summary: "run the payments example's payment provider (POST /charges, behind the Idempotency-Key face)", Run: run}
}

func run(ctx context.Context, env domain.CommandEnv) error {
	fs := flag.NewFlagSet("provider", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	addr := fs.String("addr", "127.0.0.1:8090", "address to listen on")
	if err := fs.Parse(env.Args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("provider takes flags only, not %q", fs.Arg(0))
	}
	logger := slog.New(slog.NewTextHandler(env.Stderr, nil))
	cfg := Config{Logger: logger}
	store := "memory"
	// The provider's own PostgreSQL database: a postgres:// URL, whose
	// search_path may name a schema.
	if url := env.Getenv("PROVIDER_DATABASE_URL"); url != "" {
		pool, err := pgxpool.New(ctx, url)
		if err != nil {
			return fmt.Errorf("PROVIDER_DATABASE_URL: %w", err)
		}
		defer pool.Close()
		cfg.DB, store = pool, "postgres"
	}
	s, err := Listen(ctx, *addr, cfg)
	if err != nil {
		return err
	}
	logger.Info("payment provider serving", "url", s.URL(), "store", store)
	<-ctx.Done()
	logger.Info("payment provider stopping")
	return s.Close()
}
