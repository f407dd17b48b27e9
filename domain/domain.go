package domain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"regexp"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Domain is a business the service runs: all that package app wires of it,
// and all it knows of it.
type Domain struct {
	// Name names the domain: its migrations are versioned in the table
	// goose_db_version_<Name>. Lower-case letters, digits and
	// underscores, starting with a letter.
	Name string
	// Migrations holds the domain's own goose migrations, NNNNN_name.sql
	// files at the root of the FS. With DATABASE_URL set the service
	// applies them after its own (the idempotency records), each set in
	// its own version table, so the two migrate independently. nil: none.
	Migrations fs.FS
	// Permanent reports the domain's errors that a redelivery can never
	// fix, such as a payload that does not decode: such a message skips
	// the retries and goes to the poison topic with the error as its
	// reason. The receiver's own (package consume's Permanent) are always
	// recognised. nil: none.
	Permanent func(error) bool
	// Malformed reports, of the Permanent errors, those of a payload that
	// does not decode: their messages are parked with class malformed,
	// which tells an operator that a redrive needs a fix of the handler
	// (or of the producer) first. nil: none.
	Malformed func(error) bool
	// Open builds the domain on what the service opened for it. It is
	// called once per service, before anything is subscribed.
	Open func(context.Context, Deps) (*Parts, error)
	// Commands are subcommands the domain adds to the service's binary,
	// run as `onceflow <name> [flags]`: a producer of test traffic, say.
	Commands map[string]Command
}

// Deps is what the service opened for a domain.
type Deps struct {
	// DB is the PostgreSQL pool of DATABASE_URL, the domain's tables
	// migrated; nil when DATABASE_URL is unset. In DEDUP_MODE=transaction
	// a handler's writes belong in the unit of work its context carries
	// (postgres.TxFromContext), so that they commit with its record.
	DB *pgxpool.Pool
	// Publisher is what the domain's HTTP handlers publish with: the
	// broker's publisher, or the outbox in DEDUP_MODE=transaction, which
	// commits a request's messages with its writes. It is connected once
	// the service runs: Open keeps it, and must not publish with it.
	Publisher message.Publisher
	// Logger is the service's logger.
	Logger *slog.Logger
	// Environ is the environment the service read its settings from,
	// os.Environ's form: the service hands it over (see
	// [Domain.WithEnviron]) so that the domain reads its own settings,
	// which the service does not know, with [Deps.Getenv] rather than
	// from the process, and a test's service sees the test's settings.
	// nil: nothing is set.
	Environ []string
}

// Parts is a domain as Open built it.
type Parts struct {
	// Routes is the domain's message handlers.
	Routes Routes
	// HTTP is the domain's HTTP API; the zero value serves none.
	HTTP HTTP
	// Close, when set, releases what Open opened, after the service has
	// stopped consuming and serving.
	Close func() error
}

// HTTP is a domain's HTTP API.
type HTTP struct {
	// Register adds the API's routes to mux (net/http ServeMux patterns),
	// wrapping the handler of each unsafe route in idempotent, the
	// receiver's Idempotency-Key face. The service serves mux behind
	// authentication (API_KEYS); its own routes (/metrics, /healthz,
	// /readyz, /admin/) take precedence.
	Register func(mux *http.ServeMux, idempotent func(http.Handler) http.Handler)
	// IdempotentRoutes lists the patterns Register wraps in idempotent:
	// the routes whose records the key admin addresses.
	IdempotentRoutes []string
	// MaxRequestBody bounds the body of a request behind idempotent; a
	// larger one is answered 413. Default: the receiver's.
	MaxRequestBody int64
	// ReplayedHeaders names the response headers of the API's own, such
	// as a correlation id, that a replayed answer sends again. A replay
	// sends Content-Type, Content-Language, Content-Location and Location
	// besides; no other header (an Authorization, a session) is stored.
	ReplayedHeaders []string
}

// Command is a subcommand a domain adds to the service's binary.
type Command struct {
	// Summary is the command's one line in the binary's usage.
	Summary string
	// Run runs the command.
	Run func(ctx context.Context, env CommandEnv) error
}

// CommandEnv is what the binary hands a domain's command.
type CommandEnv struct {
	// Args are the arguments after the command's name.
	Args []string
	// Environ is the process's environment, os.Environ's form.
	Environ []string
	// Stdout and Stderr are the process's output streams.
	Stdout, Stderr io.Writer
	// Settings reads the service's settings from environ (Environ, or
	// Environ with a setting changed), checked as the service checks
	// them.
	Settings func(environ []string) (Settings, error)
	// Transports lists the values TRANSPORT allows.
	Transports []string
}

// Settings are the service's settings as a command that sends it traffic
// sees them.
type Settings struct {
	// Transport is TRANSPORT: the broker the service consumes from.
	Transport string
	// URL is the base URL at which a client on this host reaches the
	// service listening on HTTP_ADDR, such as http://127.0.0.1:8080.
	URL string
	// APIKey is PUBLISH_API_KEY: the key a command sends to the
	// service's API; empty for none.
	APIKey string
	// Client is the client that APIKey names in API_KEYS, when the
	// command's environment sets both: whose data a command's messages
	// straight to the broker create, so that the API shows them to it.
	// Empty otherwise: the anonymous client.
	Client string
	// OpenProducer connects to the broker Transport names as another
	// service would, creating topics on Kafka first.
	OpenProducer func(ctx context.Context, topics []string) (Producer, error)
}

// Producer publishes straight to the service's broker, topics after
// TOPIC_PREFIX. Publish is safe for concurrent use.
type Producer interface {
	message.Publisher
	// Topic is topic as the broker names it: after TOPIC_PREFIX.
	Topic(topic string) string
	// String names the transport.
	String() string
}

// domainName is what a Domain's Name may be: it becomes part of a table
// name.
var domainName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,40}$`)

// Validate reports what keeps d from being wired: a missing or malformed
// Name, no Open, or a command without Run.
func (d Domain) Validate() error {
	var errs []error
	if !domainName.MatchString(d.Name) {
		errs = append(errs, fmt.Errorf("domain name %q: use 1 to 41 lower-case letters, digits or underscores, starting with a letter", d.Name))
	}
	if d.Open == nil {
		errs = append(errs, fmt.Errorf("domain %q: Open is nil", d.Name))
	}
	for name, c := range d.Commands {
		if c.Run == nil {
			errs = append(errs, fmt.Errorf("domain %q: command %q has no Run", d.Name, name))
		}
	}
	return errors.Join(errs...)
}
