package app

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/onceflow/onceflow/middleware/apikey"
)

// keyEntry is one key:name pair of API_KEYS or ADMIN_API_KEYS.
type keyEntry struct{ key, name string }

// keyList parses raw, the value of the setting name: "key:name" pairs
// separated by commas, each split at its last colon, whose names are of
// kind holder (client, operator). Every key must pass [apikey.CheckKey]
// and differ from the others. It returns nil when raw is blank. Its
// errors name the setting, the entry and its holder, never a key.
func keyList(name, raw, holder string) ([]keyEntry, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var entries []keyEntry
	seen := map[string]bool{}
	for i, entry := range strings.Split(raw, ",") {
		cut := strings.LastIndexByte(entry, ':')
		if cut < 0 {
			return nil, fmt.Errorf("%s entry %d is not key:%s", name, i+1, holder)
		}
		e := keyEntry{key: strings.TrimSpace(entry[:cut]), name: strings.TrimSpace(entry[cut+1:])}
		if seen[e.key] {
			return nil, fmt.Errorf("%s entry %d repeats the key of an earlier entry", name, i+1)
		}
		seen[e.key] = true
		if e.name == "" {
			return nil, fmt.Errorf("%s entry %d names no %s: use key:%s", name, i+1, holder, holder)
		}
		if err := apikey.CheckKey(e.key); err != nil {
			return nil, fmt.Errorf("%s entry %d (%s %q): %w", name, i+1, holder, e.name, err)
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// keyMap is entries as a map from key to name.
func keyMap(entries []keyEntry) map[string]string {
	m := make(map[string]string, len(entries))
	for _, e := range entries {
		m[e.key] = e.name
	}
	return m
}

// apiKeys parses API_KEYS (see keyList): nil when unset. A client may
// have several keys, to rotate them.
func (c Config) apiKeys() (*apikey.Keys, error) {
	entries, err := keyList("API_KEYS", c.APIKeys, "client")
	if entries == nil || err != nil {
		return nil, err
	}
	k, err := apikey.NewKeys(keyMap(entries))
	if err != nil {
		return nil, fmt.Errorf("API_KEYS: %w", err)
	}
	return k, nil
}

// legacyOperator is the operator ADMIN_API_KEY's key names.
const legacyOperator = "admin"

// adminKeys are the key admin's operators, key to name, and the setting
// they come from: ADMIN_API_KEYS (see keyList; one key per operator), or
// ADMIN_API_KEY, one key for the operator "admin". Both set is refused:
// which keys count would be a guess. None set: nil.
func (c Config) adminKeys() (map[string]string, string, error) {
	switch {
	case strings.TrimSpace(c.AdminAPIKeys) != "" && c.AdminAPIKey != "":
		return nil, "", errors.New("ADMIN_API_KEY and ADMIN_API_KEYS are both set: give each operator a key in ADMIN_API_KEYS and unset ADMIN_API_KEY")
	case c.AdminAPIKey != "":
		if err := apikey.CheckKey(c.AdminAPIKey); err != nil {
			return nil, "", fmt.Errorf("ADMIN_API_KEY: %w", err)
		}
		return map[string]string{c.AdminAPIKey: legacyOperator}, "ADMIN_API_KEY", nil
	}
	entries, err := keyList("ADMIN_API_KEYS", c.AdminAPIKeys, "operator")
	if entries == nil || err != nil {
		return nil, "", err
	}
	first := map[string]int{}
	for i, e := range entries {
		if j, ok := first[e.name]; ok {
			return nil, "", fmt.Errorf("ADMIN_API_KEYS entry %d gives operator %q a second key (entry %d has one): give each operator one key, which names them in the audit log", i+1, e.name, j+1)
		}
		first[e.name] = i
	}
	return keyMap(entries), "ADMIN_API_KEYS", nil
}

// validateAdminKeys refuses admin keys (and API keys) that keyList,
// adminKeys or the key admin's Handler would refuse, and an admin key
// that a client holds too: it would open every client's records. Its
// errors never show a key.
func (c Config) validateAdminKeys() error {
	clients, err := c.apiKeys()
	if err != nil {
		return err
	}
	admins, from, err := c.adminKeys()
	if err != nil || admins == nil {
		return err
	}
	if _, err := apikey.NewKeys(admins); err != nil {
		return fmt.Errorf("%s: %w", from, err)
	}
	if clients == nil {
		return nil
	}
	for _, e := range adminEntries(admins) {
		client, ok := clients.Client(e.key)
		switch {
		case ok && from == "ADMIN_API_KEY":
			return fmt.Errorf("ADMIN_API_KEY is also the API_KEYS key of client %q: give the key admin a key of its own", client)
		case ok:
			return fmt.Errorf("ADMIN_API_KEYS: the key of operator %q is also the API_KEYS key of client %q: give each operator a key of their own", e.name, client)
		}
	}
	return nil
}

// adminEntries is admins in the order of their names, so that an error
// names the same operator every time.
func adminEntries(admins map[string]string) []keyEntry {
	entries := make([]keyEntry, 0, len(admins))
	for k, name := range admins {
		entries = append(entries, keyEntry{k, name})
	}
	slices.SortFunc(entries, func(a, b keyEntry) int { return strings.Compare(a.name, b.name) })
	return entries
}

// maskAPIKeys shows a key list (API_KEYS, ADMIN_API_KEYS) with every key
// replaced by ***: the names stay readable.
func maskAPIKeys(raw string) string {
	if strings.TrimSpace(raw) == "" {
		return ""
	}
	entries := strings.Split(raw, ",")
	for i, entry := range entries {
		name := ""
		if cut := strings.LastIndexByte(entry, ':'); cut >= 0 {
			name = strings.TrimSpace(entry[cut+1:])
		}
		entries[i] = "***:" + name
	}
	return strings.Join(entries, ",")
}
