package shop_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/app/apptest"
	"github.com/onceflow/onceflow/handlers/shop"
	"github.com/onceflow/onceflow/internal/testenv"
)

// Each order is posted three times, each copy with an Idempotency-Key of
// its own so that every copy reaches the message route: the route records
// each order once, on the in-process transport and on Redis Streams.
func TestOrdersRecordedOnce(t *testing.T) {
	for _, transport := range []string{"gochannel", "redisstream"} {
		t.Run(transport, func(t *testing.T) {
			db := testenv.PostgresSchema(t)
			env := []string{"TRANSPORT=" + transport, "DATABASE_URL=" + db, "STORE=postgres"}
			if transport == "redisstream" {
				prefix, name := testenv.Names()
				testenv.DeleteRedisKeysOnCleanup(t, testenv.Redis(t), prefix)
				env = append(env, "REDIS_URL=redis://"+testenv.RedisAddr()+"/0", "TOPIC_PREFIX="+prefix, "SERVICE_NAME="+name)
			}
			s := apptest.Start(t, shop.Domain(), env...)
			const orders = 5
			for i := range orders {
				body := fmt.Sprintf(`{"order_id":"order-%d","item":"book"}`, i)
				for range 3 {
					req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/orders", strings.NewReader(body))
					req.Header.Set("Idempotency-Key", uuid.NewString())
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusAccepted {
						t.Fatalf("POST /v1/orders: %s", resp.Status)
					}
				}
			}
			pool, err := pgxpool.New(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			var rows, distinct int
			testenv.WaitFor(t, 20*time.Second, "every copy handled", func() bool {
				return s.Metric(t, "onceflow_receiver_outcomes_total", "scope", "record_order", "outcome", "processed")+
					s.Metric(t, "onceflow_receiver_outcomes_total", "scope", "record_order", "outcome", "duplicate") == 3*orders
			})
			if err := pool.QueryRow(context.Background(), "SELECT count(*), count(DISTINCT order_id) FROM recorded_orders").Scan(&rows, &distinct); err != nil {
				t.Fatal(err)
			}
			if rows != orders || distinct != orders {
				t.Errorf("%d rows for %d orders posted three times each, want one row per order", rows, distinct)
			}
		})
	}
}
