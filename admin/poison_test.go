package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/onceflow/onceflow/admin"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/poison"
	poisonmemory "github.com/onceflow/onceflow/poison/memory"
	"github.com/onceflow/onceflow/stores/memory"
)

// console is the admin API with a poison console on a memory store of
// parked messages, redriving onto a Watermill gochannel.
type console struct {
	processed atomic.Int64 // charge's processed outcomes, as the receiver counts them
	store     *poisonmemory.Store
	pubsub    *gochannel.GoChannel
	srv       *httptest.Server
}

func newConsole(t testing.TB) *console {
	t.Helper()
	store, err := poisonmemory.New(poison.Limits{MaxMessages: 20_000, MaxBytes: 64 << 20, Retention: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ps := gochannel.NewGoChannel(gochannel.Config{OutputChannelBuffer: 100}, watermill.NopLogger{})
	t.Cleanup(func() { _ = ps.Close() })
	records := memory.New(memory.Config{})
	t.Cleanup(func() { _ = records.Close() })
	c := &console{store: store, pubsub: ps}
	svc, err := admin.New(admin.Config{Store: records, Handlers: []string{"charge", "notify"}, Logger: slog.New(slog.DiscardHandler),
		Poison: &poison.Console{Store: store, Publisher: ps, Topics: []string{"payments.requested"}},
		Outcomes: func() admin.Counts {
			return admin.Counts{"charge": {"processed": float64(c.processed.Load())}}
		}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := svc.Handler(map[string]string{adminKey: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	c.srv = httptest.NewServer(h)
	t.Cleanup(c.srv.Close)
	return c
}

// park parks a message of class on the charge handler.
func (c *console) park(t testing.TB, n int, class poison.Class) string {
	t.Helper()
	key := fmt.Sprintf("pay-%d", n)
	id, err := c.store.Park(context.Background(), poison.Message{UUID: fmt.Sprintf("uuid-%d", n), Topic: "payments.requested",
		Handler: "charge", Reason: "boom " + key, Class: class, Key: key, ParkedAt: time.Now().UTC(), State: poison.Parked,
		Metadata: map[string]string{"idempotency_key": key, poison.ReasonKey: "boom", poison.ClassKey: string(class), poison.TopicKey: "payments.requested"},
		Payload:  []byte(fmt.Sprintf(`{"payment_id":%q}`, key))})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (c *console) call(t *testing.T, method, path string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, c.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, body)
		}
	}
	return resp.StatusCode
}

// The API lists without payloads, shows one with it, refuses to redrive a
// reused key unless forced, redrives onto the message's topic without the
// poison queue's fields, and answers bad input with 400 and 404.
func TestPoisonAPI(t *testing.T) {
	c := newConsole(t)
	permanent := c.park(t, 1, poison.Permanent)
	reused := c.park(t, 2, poison.KeyReused)
	out, err := c.pubsub.Subscribe(context.Background(), "payments.requested")
	if err != nil {
		t.Fatal(err)
	}

	var page admin.Page
	if code := c.call(t, "GET", "/admin/poison", &page); code != 200 || len(page.Messages) != 2 || page.Messages[0].Payload != nil {
		t.Fatalf("list: %d %+v", code, page)
	}
	var m poison.Message
	if code := c.call(t, "GET", "/admin/poison/"+permanent, &m); code != 200 || string(m.Payload) != `{"payment_id":"pay-1"}` {
		t.Fatalf("show: %d %+v", code, m)
	}
	if code := c.call(t, "POST", "/admin/poison/"+reused+"/redrive", nil); code != http.StatusConflict {
		t.Errorf("redrive of a reused key without force: %d, want 409", code)
	}
	if code := c.call(t, "POST", "/admin/poison/"+permanent+"/redrive", &m); code != 200 || m.State != poison.Redriven || m.SettledBy != "alice" {
		t.Fatalf("redrive: %d %+v", code, m)
	}
	select {
	case msg := <-out:
		if msg.UUID != "uuid-1" || string(msg.Payload) != `{"payment_id":"pay-1"}` || msg.Metadata.Get("idempotency_key") != "pay-1" ||
			msg.Metadata.Get(poison.RedrivenFromKey) != permanent || msg.Metadata.Get(poison.ReasonKey) != "" || msg.Metadata.Get(poison.ClassKey) != "" {
			t.Errorf("redriven message %s %q %v", msg.UUID, msg.Payload, msg.Metadata)
		}
		msg.Ack()
	case <-time.After(10 * time.Second):
		t.Fatal("nothing redriven to payments.requested")
	}
	if code := c.call(t, "POST", "/admin/poison/"+permanent+"/redrive", nil); code != http.StatusConflict {
		t.Errorf("a second redrive: %d, want 409", code)
	}
	var b poison.Batch
	if code := c.call(t, "POST", "/admin/poison/redrive?force=true&dry_run=true", &b); code != 200 || b.Done != 1 || !b.DryRun {
		t.Errorf("dry run: %d %+v", code, b)
	}
	if code := c.call(t, "POST", "/admin/poison/discard?class=key_reused", &b); code != 200 || b.Done != 1 {
		t.Errorf("discard by class: %d %+v", code, b)
	}
	for path, want := range map[string]int{
		"/admin/poison?class=bogus":     400,
		"/admin/poison?limit=0":         400,
		"/admin/poison?since=yesterday": 400,
		"/admin/poison?state=gone":      400,
		"/admin/poison/999":             404,
	} {
		if code := c.call(t, "GET", path, nil); code != want {
			t.Errorf("GET %s: %d, want %d", path, code, want)
		}
	}
}

// browser is an HTTP client that keeps cookies and does not follow
// redirects, as the page's tests read each answer.
func browser(t *testing.T) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func post(t *testing.T, c *http.Client, u string, form url.Values) *http.Response {
	t.Helper()
	resp, err := c.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// The page asks for a key, keeps it in a strict cookie, and refuses a
// form without its session's token: another site cannot redrive.
func TestPageSignInAndForms(t *testing.T) {
	c := newConsole(t)
	id := c.park(t, 1, poison.Permanent)
	c.processed.Store(7)
	b := browser(t)
	if code, body := get(t, b, c.srv.URL+"/admin/"); code != 200 || !strings.Contains(body, `name="key"`) || strings.Contains(body, "pay-1") {
		t.Fatalf("signed out, /admin/ = %d:\n%s", code, body)
	}
	if resp := post(t, b, c.srv.URL+"/admin/page/messages/"+id+"/redrive", nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a signed-out redrive = %d, want a redirect to sign in", resp.StatusCode)
	}
	if resp := post(t, b, c.srv.URL+"/admin/page/login", url.Values{"key": {"wrong-key-0123456789abc"}}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong key = %d, want 401", resp.StatusCode)
	}
	resp := post(t, b, c.srv.URL+"/admin/page/login", url.Values{"key": {adminKey}})
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cookies) != 1 || !cookies[0].HttpOnly ||
		cookies[0].SameSite != http.SameSiteStrictMode || cookies[0].Path != "/admin/" {
		t.Fatalf("sign in = %d %+v", resp.StatusCode, cookies)
	}
	code, body := get(t, b, c.srv.URL+"/admin/")
	if code != 200 || !strings.Contains(body, "pay-1") || !strings.Contains(body, "boom pay-1") || !strings.Contains(body, "alice") {
		t.Fatalf("signed in, /admin/ = %d:\n%s", code, body)
	}
	if !strings.Contains(body, `<td>charge</td><td class="n">7</td>`) { // charge's processed outcomes since the service began
		t.Errorf("the outcomes are not shown:\n%s", body)
	}
	if resp := post(t, b, c.srv.URL+"/admin/page/messages/"+id+"/redrive", nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a redrive without the form's token = %d, want 403", resp.StatusCode)
	}
	if m, _ := c.store.Get(context.Background(), id); m.State != poison.Parked {
		t.Fatalf("a refused form changed the message: %s", m.State)
	}
	token := csrfField.FindStringSubmatch(body)
	if token == nil {
		t.Fatal("no token in the page's forms")
	}
	if resp := post(t, b, c.srv.URL+"/admin/page/messages/"+id+"/discard", url.Values{"csrf": {token[1]}}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("discard = %d", resp.StatusCode)
	}
	if m, _ := c.store.Get(context.Background(), id); m.State != poison.Discarded || m.SettledBy != "alice" {
		t.Errorf("after the discard: %+v", m)
	}
	if _, body := get(t, b, c.srv.URL+"/admin/page/messages/"+id); !strings.Contains(body, "discarded") || !strings.Contains(body, `{&#34;payment_id&#34;:&#34;pay-1&#34;}`) {
		t.Errorf("the message page:\n%s", body)
	}
}

// With 10,000 parked messages the page shows the newest 50 and a link to
// the next 50, which follows on without a gap.
func TestPageTenThousandParked(t *testing.T) {
	c := newConsole(t)
	for i := range 10_000 {
		c.park(t, i, poison.Classes[i%len(poison.Classes)])
	}
	b := browser(t)
	post(t, b, c.srv.URL+"/admin/page/login", url.Values{"key": {adminKey}})
	rows := regexp.MustCompile(`<tr data-id="(\d+)">`)
	next := regexp.MustCompile(`id="next-page" href="([^"]+)"`)
	u := c.srv.URL + "/admin/"
	want := 10_000
	for page := range 3 {
		code, body := get(t, b, u)
		ids := rows.FindAllStringSubmatch(body, -1)
		if code != 200 || len(ids) != poison.DefaultLimit {
			t.Fatalf("page %d: %d with %d rows", page, code, len(ids))
		}
		for _, id := range ids {
			if id[1] != fmt.Sprint(want) {
				t.Fatalf("page %d shows %s where %d is next", page, id[1], want)
			}
			want--
		}
		link := next.FindStringSubmatch(body)
		if link == nil {
			t.Fatalf("page %d has no link to the next", page)
		}
		u = c.srv.URL + strings.ReplaceAll(link[1], "&amp;", "&")
	}
}

// BenchmarkPage renders the overview over 10,000 parked messages: the
// outcomes, the groups and the newest page.
func BenchmarkPage(b *testing.B) {
	c := newConsole(b)
	n := 10_000
	if testenv.Getenv("BENCH_SMOKE", "") == "1" { // make test's one run
		n = 100
	}
	for i := range n {
		c.park(b, i, poison.Classes[i%len(poison.Classes)])
	}
	req, _ := http.NewRequest(http.MethodGet, c.srv.URL+"/admin/", nil)
	req.AddCookie(&http.Cookie{Name: "onceflow_admin", Value: adminKey})
	for b.Loop() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("%v %v", resp, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
