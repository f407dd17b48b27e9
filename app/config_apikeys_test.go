package app

import (
	"log/slog"
	"strings"
	"testing"
)

// A key that cannot be a random secret stops start-up, in one line that
// names the variable, the entry and its client or operator, and the rule;
// never the key.
func TestWeakKeysAreRefused(t *testing.T) {
	const good = "9f86d081884c7d659a2feaa0c55ad015"
	for _, tc := range []struct {
		env  []string
		weak string
		want string
	}{
		{[]string{"API_KEYS=a:tenant-a"}, "a",
			`API_KEYS entry 1 (client "tenant-a"): the key is too short (1 of 16 characters): use a random key: at least 16 characters, at least 8 of them different`},
		{[]string{"API_KEYS=" + good + ":client-a,abababababababab:client-b"}, "abababababababab",
			`API_KEYS entry 2 (client "client-b"): the key has too few different characters (2 of 8)`},
		{[]string{"ADMIN_API_KEY=aaaaaaaaaaaaaaaa"}, "aaaaaaaaaaaaaaaa",
			`ADMIN_API_KEY: the key has too few different characters (1 of 8)`},
		{[]string{"ADMIN_API_KEYS=passwordpassword:alice"}, "passwordpassword",
			`ADMIN_API_KEYS entry 1 (operator "alice"): the key has too few different characters (7 of 8)`},
		{[]string{"ADMIN_API_KEYS=" + good + ":alice,s3cret:bob"}, "s3cret",
			`ADMIN_API_KEYS entry 2 (operator "bob"): the key is too short (6 of 16 characters)`},
	} {
		_, err := LoadConfig(tc.env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadConfig(%q) = %v, want an error containing %q", tc.env, err, tc.want)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || len(tc.weak) > 4 && strings.Contains(msg, tc.weak) || strings.Contains(msg, good) {
			t.Errorf("LoadConfig(%q): %q spans lines or shows a key", tc.env, msg)
		}
	}
}

// ADMIN_API_KEYS gives each operator a key of their own, logged with the
// operators' names only; ADMIN_API_KEY is the one operator "admin"; keys
// are one per operator, distinct, and no client's.
func TestAdminKeysConfig(t *testing.T) {
	const alice, bob, client = "alices-admin-key-0123", "bobs-admin-key-456789", "key-of-client-a-0123"
	cfg, err := LoadConfig([]string{"ADMIN_API_KEYS=" + alice + ":alice, " + bob + ":bob", "API_KEYS=" + client + ":client-a",
		"OPERATOR_API_KEY=" + alice})
	if err != nil {
		t.Fatal(err)
	}
	keys, from, err := cfg.adminKeys()
	if err != nil || from != "ADMIN_API_KEYS" || len(keys) != 2 || keys[alice] != "alice" || keys[bob] != "bob" {
		t.Errorf("adminKeys() = %v, %q, %v; want alice's and bob's keys from ADMIN_API_KEYS", keys, from, err)
	}
	var b strings.Builder
	slog.New(slog.NewTextHandler(&b, nil)).Info("config", "config", cfg)
	if out := b.String(); strings.Contains(out, "admin-key") || !strings.Contains(out, "admin_api_keys=***:alice,***:bob") ||
		!strings.Contains(out, "operator_api_key_set=true") {
		t.Errorf("logged config: %s; want the operators without their keys", out)
	}

	cfg, err = LoadConfig([]string{"ADMIN_API_KEY=" + alice})
	if err != nil {
		t.Fatal(err)
	}
	if keys, from, err := cfg.adminKeys(); err != nil || from != "ADMIN_API_KEY" || len(keys) != 1 || keys[alice] != "admin" {
		t.Errorf("adminKeys() of ADMIN_API_KEY = %v, %q, %v; want the one operator admin", keys, from, err)
	}

	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"ADMIN_API_KEY=" + alice, "ADMIN_API_KEYS=" + bob + ":bob"}, "ADMIN_API_KEY and ADMIN_API_KEYS are both set"},
		{[]string{"ADMIN_API_KEYS=" + alice + ":alice," + bob + ":alice"}, `ADMIN_API_KEYS entry 2 gives operator "alice" a second key (entry 1 has one)`},
		{[]string{"ADMIN_API_KEYS=" + alice + ":alice," + alice + ":bob"}, "ADMIN_API_KEYS entry 2 repeats the key of an earlier entry"},
		{[]string{"ADMIN_API_KEYS=" + alice}, "ADMIN_API_KEYS entry 1 is not key:operator"},
		{[]string{"ADMIN_API_KEYS=" + alice + ":"}, "ADMIN_API_KEYS entry 1 names no operator: use key:operator"},
		{[]string{"ADMIN_API_KEYS=" + alice + ":alice," + client + ":bob", "API_KEYS=" + client + ":client-a"},
			`ADMIN_API_KEYS: the key of operator "bob" is also the API_KEYS key of client "client-a"`},
	} {
		_, err := LoadConfig(tc.env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadConfig(%q) = %v, want an error containing %q", tc.env, err, tc.want)
			continue
		}
		for _, k := range []string{alice, bob, client} {
			if strings.Contains(err.Error(), k) {
				t.Errorf("LoadConfig(%q): %q shows a key", tc.env, err)
			}
		}
	}
}
