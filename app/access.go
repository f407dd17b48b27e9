package app

import (
	"errors"
	"log/slog"
	"strings"
)

// errNoAPIKeys is start-up's refusal of an API open to anyone.
var errNoAPIKeys = errors.New("API_KEYS is unset: set it (key:client pairs) to require an API key, " +
	"or set ALLOW_ANONYMOUS=true to serve every caller as one anonymous client (development only)")

// anonymous reports whether the API serves callers without a key, as one
// anonymous client: API_KEYS unset and ALLOW_ANONYMOUS=true.
func (c Config) anonymous() bool { return strings.TrimSpace(c.APIKeys) == "" && c.AllowAnonymous }

// checkAccess refuses to serve an API open to anyone unless
// ALLOW_ANONYMOUS=true says that is meant, and then warns: a template is
// copied with its defaults, and an open API is not one to ship by
// accident. ALLOW_ANONYMOUS=true beside API_KEYS changes nothing, which
// it says too.
func (c Config) checkAccess(logger *slog.Logger) error {
	switch {
	case c.anonymous():
		logger.Warn("ALLOW_ANONYMOUS=true and API_KEYS unset: the API serves every caller as one anonymous client, " +
			"who sees what every other caller created and may be replayed another caller's response; " +
			"set API_KEYS before anyone else can reach it")
	case strings.TrimSpace(c.APIKeys) == "":
		return errNoAPIKeys
	case c.AllowAnonymous:
		logger.Warn("ALLOW_ANONYMOUS=true changes nothing: API_KEYS is set, so every API request needs a key")
	}
	return nil
}
