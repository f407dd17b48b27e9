package chaos

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
)

// httpLease is DEDUP_LEASE of the HTTP rows (RowDefaults): how long a claim
// left by a client that went away may block its key.
const httpLease = 4 * time.Second

// Scenario 7, HTTP, on amqp with the Redis store in lease mode, two
// instances: concurrent POST /v1/charges (the test domain's CreatePattern)
// with one Idempotency-Key and body spread over both make one request and
// one charge, and every answer is the original, its replay, or 409 with
// Retry-After. Then clients that go away while their request runs — a
// cancelled request, or a TCP connection closed right after the request
// was written — leave no key blocked beyond its lease: a retry after
// DEDUP_LEASE gets the request's 2xx.
func TestChaosHTTP(t *testing.T) {
	needBroker(t, "amqp")
	svc := setUp(t)
	sc := chaosScale()
	concurrent, gone := 200, 20
	if sc.full {
		concurrent, gone = 1000, 100
	}
	t.Run("amqp/lease-redis", func(t *testing.T) {
		setup := Setup{Transport: "amqp", Store: "redis", Mode: "lease"}
		row := NewRow(t, svc, setup)
		row.Start(2)
		client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: concurrent}}
		defer client.CloseIdleConnections()
		var problems []string

		// Same key, same body, all at once.
		id := row.Prefix + "http-same"
		body := requestBody(id)
		type answer struct {
			status   int
			replayed bool
			retry    string
			body     string
			err      error
		}
		answers := make([]answer, concurrent)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for n := range concurrent {
			wg.Go(func() {
				<-start
				resp, err := post(context.Background(), client, row.Instances[n%2].Addr, id, body)
				if err != nil {
					answers[n].err = err
					return
				}
				b, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				answers[n] = answer{status: resp.StatusCode, replayed: resp.Header.Get("Idempotent-Replayed") == "true",
					retry: resp.Header.Get("Retry-After"), body: string(b), err: err}
			})
		}
		close(start)
		wg.Wait()
		var originals, replays, conflicts int
		var original *answer
		for n := range answers {
			if a := &answers[n]; a.status/100 == 2 && !a.replayed {
				originals++
				original = a
			}
		}
		for _, a := range answers {
			switch {
			case a.err != nil:
				problems = append(problems, "a request failed: "+a.err.Error())
			case a.status/100 == 2 && !a.replayed:
			case a.replayed && original != nil && a.status == original.status && a.body == original.body:
				replays++
			case a.status == http.StatusConflict && a.retry != "":
				conflicts++
			default:
				problems = append(problems, fmt.Sprintf("answer %d (replayed %v, Retry-After %q): %.200s", a.status, a.replayed, a.retry, a.body))
			}
		}
		if originals != 1 {
			problems = append(problems, fmt.Sprintf("%d original answers, want 1", originals))
		}

		// Clients that go away mid-request, under the load of each other.
		ids := make([]string, gone)
		var cancelled, closed int
		for n := range ids {
			ids[n] = fmt.Sprintf("%shttp-gone-%d", row.Prefix, n)
			if n%2 == 0 {
				cancelled++
			} else {
				closed++
			}
		}
		left := time.Now()
		for n, gid := range ids {
			addr := row.Instances[n%2].Addr
			wg.Go(func() {
				if n%2 == 0 {
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(1+rand.IntN(30))*time.Millisecond)
					defer cancel()
					if resp, err := post(ctx, client, addr, gid, requestBody(gid)); err == nil {
						_ = resp.Body.Close()
					}
					return
				}
				if err := postAndHangUp(addr, gid, requestBody(gid)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()

		// After the lease every key answers the request's 2xx.
		time.Sleep(httpLease)
		var recovered int
		var recovery time.Duration
		for _, gid := range ids {
			deadline := time.Now().Add(httpLease + 10*time.Second)
			for {
				resp, err := post(context.Background(), client, row.Instances[rand.IntN(2)].Addr, gid, requestBody(gid))
				status := 0
				if err == nil {
					status = resp.StatusCode
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
				}
				if status/100 == 2 {
					recovered++
					recovery = max(recovery, time.Since(left))
					break
				}
				if time.Now().After(deadline) {
					problems = append(problems, fmt.Sprintf("key of %s still answers %d (%v) %v after its client went away", gid, status, err, time.Since(left).Round(time.Second)))
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
		}

		// How many handler runs saw their client gone, from the logs.
		var seenGone int
		for _, i := range row.Instances {
			if b, err := os.ReadFile(i.LogPath); err == nil {
				seenGone += strings.Count(string(b), "context canceled")
			}
		}

		unique := 1 + gone
		f, _, err := row.WaitFinished(unique, 3*time.Second, sc.bound)
		if err != nil {
			problems = append(problems, err.Error())
		}
		if f.Charges.Rows != int64(unique) || f.Notices.Rows != int64(unique) {
			problems = append(problems, fmt.Sprintf("%d charges and %d notices of %d requests, want exactly one each", f.Charges.Rows, f.Notices.Rows, unique))
		}
		problems = append(problems, instanceProblems(row)...)
		problems = dedupe(problems)
		fault := fmt.Sprintf("%d concurrent same-key POSTs over 2 instances: %d original, %d replayed, %d 409 + Retry-After; %d clients gone mid-request (%d cancelled, %d TCP closed; %d log lines of a cancelled handler), %d retries after DEDUP_LEASE=%v answered 2xx",
			concurrent, originals, replays, conflicts, gone, cancelled, closed, seenGone, recovered, httpLease)
		res := Result{Run: t.Name(), Scenario: "HTTP", Transport: setup.Transport, Mode: setup.modeLabel(), Fault: fault,
			Sent: concurrent + gone, Unique: unique, Figures: f, Recovery: recovery, PeakRSS: row.PeakRSS(), Verdict: "ok"}
		if len(problems) > 0 {
			res.Verdict = "failed: " + strings.Join(problems, "; ")
			t.Error(res.Verdict)
		}
		t.Logf("%s: %s; %+v; all keys answered 2xx %v after their clients went away; peak RSS %d MiB: %s",
			t.Name(), fault, f, recovery.Round(100*time.Millisecond), res.PeakRSS>>20, res.Verdict)
		report.Add(res)
	})
}

// requestBody is the body of the test domain's CreatePattern for id.
func requestBody(id string) string {
	return fmt.Sprintf(`{"id":%q,"amount":1234}`, id)
}

// createPath is the path of the test domain's CreatePattern, /v1/charges.
var createPath = strings.TrimPrefix(testdomain.CreatePattern, http.MethodPost+" ")

// post sends POST /v1/charges with body and Idempotency-Key key to addr.
func post(ctx context.Context, client *http.Client, addr, key, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+createPath, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	return client.Do(req)
}

// postAndHangUp writes a whole POST /v1/charges on a new TCP connection
// and closes it at once, without reading the answer: the server sees the
// client gone while its handler runs.
func postAndHangUp(addr, key, body string) error {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return err
	}
	var req bytes.Buffer
	fmt.Fprintf(&req, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nIdempotency-Key: %s\r\nContent-Length: %d\r\n\r\n%s",
		createPath, addr, key, len(body), body)
	_, err = conn.Write(req.Bytes())
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // a reset, not a graceful close
	}
	_ = conn.Close()
	return err
}
