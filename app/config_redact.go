package app

import (
	"net/url"
	"strings"
)

// redacted replaces a secret part of a URL, as in [url.URL.Redacted].
const redacted = "xxxxx"

// redact masks what a connection URL may carry of a secret, so that it can
// be logged and put in errors:
//
//   - a password, keeping its user name (postgres://app:xxxxx@db/app);
//   - a user name without a password, which can be a token
//     (nats://xxxxx@host for nats://TOKEN@host);
//   - the value of every query parameter whose name speaks of a secret
//     (password, sslpassword, token, access_token, api_key, apikey,
//     secret...; see secretParam);
//   - a fragment.
//
// A value that does not parse as a URL with a scheme (a keyword/value DSN
// such as "host=db password=x") is masked whole, as "***", and so is one
// with an @ after its host: a password holding an unescaped /, ? or # cut
// the URL short there, and the rest of it would show.
func redact(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || strings.Contains(u.Path+u.RawQuery+u.Fragment, "@") {
		return "***"
	}
	if u.User != nil {
		if p, _ := u.User.Password(); p != "" {
			u.User = url.UserPassword(u.User.Username(), redacted)
		} else {
			u.User = url.User(redacted)
		}
	}
	if at := strings.LastIndexByte(u.Opaque, '@'); at >= 0 {
		u.Opaque = redacted + u.Opaque[at:] // user:pass@host without "//"
	}
	u.RawQuery = redactQuery(u.RawQuery)
	if u.Fragment != "" {
		u.Fragment, u.RawFragment = redacted, ""
	}
	return u.String()
}

// redactQuery masks the values of the secret parameters of a raw query,
// leaving the others as they were written, in their order.
func redactQuery(raw string) string {
	if raw == "" {
		return ""
	}
	params := strings.Split(raw, "&")
	for i, p := range params {
		k, _, _ := strings.Cut(p, "=")
		name, err := url.QueryUnescape(k)
		if err != nil || secretParam(name) {
			params[i] = k + "=" + redacted
		}
	}
	return strings.Join(params, "&")
}

// secretParam reports whether a query parameter called name may carry a
// secret. It errs on the side of masking: "sslkey" (a file name) is masked
// with "api_key".
func secretParam(name string) bool {
	n := strings.NewReplacer("_", "", "-", "", ".", "").Replace(strings.ToLower(name))
	if n == "sig" { // Azure shared access signatures
		return true
	}
	for _, s := range []string{"pass", "pwd", "token", "secret", "key", "auth", "credential", "signature"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}
