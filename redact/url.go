package redact

import "net/url"

// URL is how a configured endpoint's URL is shown: its scheme and host
// (with the port) and, when anything follows the host, "/…" in place of
// it; "[REDACTED]" when raw is not an absolute URL with a host. The path,
// query and fragment of a webhook are often its credential (Slack's
// /services/T…/B…/<secret>, Discord's /api/webhooks/<id>/<token>, a
// ?token= or ?api_key=), and a user and password never show. It is the
// one form of such a URL that Ava shows or stores: every surface that
// names a hook's URL (the API, `ava hooks`, a delivery's error, the logs)
// goes through it. The store's migrations that removed URLs from stored
// rows compute the same form in SQL.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return Redacted
	}
	shown := u.Scheme + "://" + u.Host
	if u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		shown += "/…"
	}
	return shown
}
