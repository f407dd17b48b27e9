package apikey

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

func TestKeys(t *testing.T) {
	keys, err := NewKeys(map[string]string{"k1": "a", "k2": "a", "k3": "b", "k1x": "c"})
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"k1": "a", "k2": "a", "k3": "b", "k1x": "c", "k": "", "k1 ": "", "": ""} {
		got, ok := keys.Client(key)
		if got != want || ok != (want != "") {
			t.Errorf("Client(%q) = %q, %v; want %q", key, got, ok, want)
		}
	}
	if got := keys.Clients(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("Clients() = %v", got)
	}
}

func TestNewKeysRejects(t *testing.T) {
	for _, keys := range []map[string]string{
		{}, {"": "a"}, {"secret-key": ""}, {"secret-key": "a\nb"}, {"secret-key": "\xff"},
	} {
		_, err := NewKeys(keys)
		if err == nil {
			t.Errorf("NewKeys(%q) succeeded", keys)
		} else if strings.Contains(err.Error(), "secret-key") {
			t.Errorf("error %q shows the key", err)
		}
	}
}

func TestAuthenticate(t *testing.T) {
	keys, err := NewKeys(map[string]string{"key-a": "client-a"})
	if err != nil {
		t.Fatal(err)
	}
	h := Authenticate(keys, nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client, _ := ClientFromContext(r.Context())
		_, _ = w.Write([]byte(client))
	}))
	for _, tc := range []struct {
		auth   []string
		status int
		body   string
	}{
		{auth: []string{"Bearer key-a"}, status: 200, body: "client-a"},
		{auth: []string{"bearer  key-a"}, status: 200, body: "client-a"},
		{auth: nil, status: 401},
		{auth: []string{"Bearer "}, status: 401},
		{auth: []string{"Bearer key-b"}, status: 401},
		{auth: []string{"Basic key-a"}, status: 401},
		{auth: []string{"Bearer key-a", "Bearer key-a"}, status: 401},
	} {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.Header["Authorization"] = tc.auth
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.status || (tc.status == 200 && w.Body.String() != tc.body) {
			t.Errorf("%q: %d %s, want %d %s", tc.auth, w.Code, w.Body, tc.status, tc.body)
		}
		if tc.status == 401 && (!strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer") ||
			w.Header().Get("Content-Type") != "application/problem+json") {
			t.Errorf("%q: 401 without WWW-Authenticate Bearer or problem: %v", tc.auth, w.Header())
		}
	}
}
