package app

import (
	"net/url"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/transport"
)

// DATABASE_URL's sslmode is honoured by every pool the service opens on it
// (the sql transport's too, when the build has it): sslmode=require
// connects over TLS, and sslmode=verify-full refuses a server whose
// certificate the sslrootcert CA did not sign.
func TestDatabaseURLSSLMode(t *testing.T) {
	t.Parallel()
	schemaURL := testenv.PostgresSchema(t)
	with := func(params ...string) string {
		u, err := url.Parse(schemaURL)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		for i := 0; i+1 < len(params); i += 2 {
			q.Set(params[i], params[i+1])
		}
		u.RawQuery = q.Encode()
		return u.String()
	}
	var on string
	if err := testenv.Postgres(t).QueryRow(t.Context(), "SHOW ssl").Scan(&on); err != nil || on != "on" {
		t.Skipf("the test PostgreSQL does not offer TLS (ssl=%q, %v)", on, err)
	}
	env := []string{"STORE=postgres", "DATABASE_URL=" + with("sslmode", "require")}
	if builtIn(transport.SQL) {
		env = append(env, "TRANSPORT="+transport.SQL)
	}
	a := startApp(t, env...)
	var ssl bool
	if err := a.pool.QueryRow(t.Context(), "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl); err != nil || !ssl {
		t.Errorf("sslmode=require: the service's connection has ssl=%t (%v), want TLS", ssl, err)
	}

	certs := testenv.TLS(t) // a CA that signed nothing the server holds
	// The service verifies the server's certificate: it fails on it.
	startupFails(t, []string{"DATABASE_URL=" + with("sslmode", "verify-full", "sslrootcert", certs.CAFile)},
		"certificate", "", 15*time.Second)
}
