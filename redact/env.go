package redact

import (
	"net/url"
	"strings"
)

// secretNameSuffixes end the names of variables whose values are secret.
var secretNameSuffixes = []string{"_KEY", "_APIKEY", "_TOKEN", "_SECRET", "_PASS", "_PASSWD", "_PWD", "_CREDENTIALS"}

// secretNameParts appear in the names of variables whose values are
// secret.
var secretNameParts = []string{"PASSWORD", "SECRET"}

// SecretName reports whether an environment variable's name looks like
// it holds a secret: it ends in _KEY, _APIKEY, _TOKEN, _SECRET, _PASS,
// _PASSWD, _PWD or _CREDENTIALS, or contains PASSWORD or SECRET (ignoring
// case). Ava's own secret variables are config.SecretEnv; their values
// reach the redactor as Options.Secrets.
// ANTHROPIC_API_KEY, AVA_TOKEN, MY_SERVICE_PASS and SECRET_KEY_BASE all
// do.
func SecretName(name string) bool {
	n := strings.ToUpper(name)
	for _, s := range secretNameSuffixes {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	for _, p := range secretNameParts {
		if strings.Contains(n, p) {
			return true
		}
	}
	return false
}

// EnvSecrets returns the secret values in an environment given as
// "NAME=value" entries: the whole value of every variable with a
// [SecretName], and the password of every value that is a URL with one
// (DATABASE_URL=postgres://user:pass@host/db gives "pass"). Empty values
// are left out.
func EnvSecrets(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || value == "" {
			continue
		}
		if SecretName(name) {
			out = append(out, value)
			continue
		}
		out = append(out, urlPasswords(value)...)
	}
	return out
}

// urlPasswords returns the password of value when value is a URL with
// credentials, as written (percent-encoded) and decoded; nil otherwise.
func urlPasswords(value string) []string {
	if !strings.Contains(value, "://") || !strings.Contains(value, "@") {
		return nil
	}
	u, err := url.Parse(value)
	if err != nil || u.User == nil {
		return nil
	}
	pw, ok := u.User.Password()
	if !ok || pw == "" {
		return nil
	}
	out := []string{pw}
	if raw, ok := rawPassword(value); ok && raw != pw {
		out = append(out, raw)
	}
	return out
}

// rawPassword is the password of a URL as written: between the first
// colon after "://" and the last '@' of the authority.
func rawPassword(value string) (string, bool) {
	_, rest, _ := strings.Cut(value, "://")
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	userinfo, _, ok := cutLast(rest, "@")
	if !ok {
		return "", false
	}
	_, pw, ok := strings.Cut(userinfo, ":")
	return pw, ok
}

// cutLast is strings.Cut at the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}
