package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

// Planted secrets: realistic formats, made up.
const (
	awsKeyID   = "AKIAIOSFODNN7EXAMPLE"
	awsSecret  = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	ghToken    = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
	ghPAT      = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"
	slackToken = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
	jwt        = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	pemBlock   = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MbmfsR3s\nAbCdEfGh0123456789+/==\n-----END RSA PRIVATE KEY-----"
)

func TestPatterns(t *testing.T) {
	r := New(Options{})
	for _, tc := range []struct{ name, in, want string }{
		{"anthropic key", `key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv-_0`, `key [REDACTED]`},
		{"openai keys", `sk-proj-abcdefghijklmnop1234 and sk-or-v1-0123456789abcdef0123`, `[REDACTED] and [REDACTED]`},
		{"key after JSON escape", `line\nsk-abcdefghijklmnopqrstu`, `line\n[REDACTED]`},
		{"bearer", `Authorization: Bearer abc.DEF-123_xyz==`, `Authorization: Bearer [REDACTED]`},
		{"telegram in URL", `https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe`, `https://api.telegram.org/bot[REDACTED]/getMe`},
		{"aws key id", "id=" + awsKeyID + " done", "id=[REDACTED] done"},
		{"aws session key id", "ASIAY34FZKBOKMUTVV7A", "[REDACTED]"},
		{"aws secret in credentials file", "[default]\naws_access_key_id = " + awsKeyID + "\naws_secret_access_key = " + awsSecret + "\n",
			"[default]\naws_access_key_id = [REDACTED]\naws_secret_access_key = [REDACTED]\n"},
		{"aws secret in env", "AWS_SECRET_ACCESS_KEY=" + awsSecret, "AWS_SECRET_ACCESS_KEY=[REDACTED]"},
		{"github token", "token " + ghToken + ".", "token [REDACTED]."},
		{"github fine-grained token", ghPAT, "[REDACTED]"},
		{"github other kinds", "gho_16C7e42F292c6912E7710c838347Ae178B4a ghs_16C7e42F292c6912E7710c838347Ae178B4a", "[REDACTED] [REDACTED]"},
		{"slack token", "SLACK " + slackToken, "SLACK [REDACTED]"},
		{"jwt", "cookie: session=" + jwt + ";", "cookie: session=[REDACTED];"},
		{"pem block", "key:\n" + pemBlock + "\nend", "key:\n[REDACTED]\nend"},
		{"pem block cut short", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU", "[REDACTED]"},
		{"url password", "postgres://ava:hunter2-pw@db.internal:5432/ava", "postgres://ava:[REDACTED]@db.internal:5432/ava"},
		{"url password, https", "see https://bob:s3cret@example.com/x", "see https://bob:[REDACTED]@example.com/x"},
		{"password assignment", "DB_PASSWORD=correct-horse-battery", "DB_PASSWORD=[REDACTED]"},
		{"quoted assignment", `{"client_secret": "abcdef123456"}`, `{"client_secret": "[REDACTED]"}`},
		{"secret key base", "SECRET_KEY_BASE=9f86d081884c7d659a2feaa0c55ad015", "SECRET_KEY_BASE=[REDACTED]"},
		{"env pass", "MY_SERVICE_PASS: opensesame99", "MY_SERVICE_PASS: [REDACTED]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.String(tc.in); got != tc.want {
				t.Errorf("Redact(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestNearMisses are texts that look a little like a secret and must be
// left alone.
func TestNearMisses(t *testing.T) {
	r := New(Options{Secrets: []string{"short"}})
	for _, in := range []string{
		"the task-force asked a short question at 14:05:30",
		"risk-management, sk-short, ask-me-anything",
		"bearer of bad news",
		"commit 3f2a9c1 and hash 9f86d081884c7d65",
		"id 123e4567-e89b-12d3-a456-426614174000",
		"AKIA is not a key, nor AKIAshort, nor XAKIAIOSFODNN7EXAMPLEX",
		"ghp_short and gh_pages and the github_pat_ prefix",
		"xoxo kisses, xoxb-short",
		"eyJhbGciOi alone, a.b.c and v1.2.3",
		"-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
		"https://example.com:8443/path?q=1 and mailto:bob@example.com and git@github.com:org/repo.git",
		"ssh://git@github.com/org/repo.git",
		`{"input_tokens":1200,"max_tokens":4096,"cache_key":"x","key":"value"}`,
		"the password: is in the vault; token: none",
		`{"primary_key": 42}`,
	} {
		if got := r.String(in); got != in {
			t.Errorf("Redact(%q) = %q, want it unchanged", in, got)
		}
	}
}

func TestSecretsAndEnvironment(t *testing.T) {
	env := []string{
		"MY_SERVICE_PASS=opensesame99",
		"SECRET_KEY_BASE=9f86d081884c7d659a2feaa0c55ad015",
		"GITLAB_TOKEN=glpat-abcdefghij0123",
		"DATABASE_URL=postgres://ava:p%40ss-w0rd!@db:5432/ava",
		"FEATURE_KEY=on",     // too short to mask
		"HOME=/home/ava",     // not secret
		"EDITOR=vim",         // not secret
		"PATH=/usr/bin:/bin", // not secret
	}
	r := New(Options{Secrets: []string{"AVA-token-value-1", "ab\"cd\\ef-quoted"}, Environ: env})
	for _, tc := range []struct{ in, want string }{
		{"pass opensesame99.", "pass [REDACTED]."},
		{"base 9f86d081884c7d659a2feaa0c55ad015", "base [REDACTED]"},
		{"gitlab glpat-abcdefghij0123", "gitlab [REDACTED]"},
		{"pw p@ss-w0rd! and p%40ss-w0rd!", "pw [REDACTED] and [REDACTED]"},
		{"token AVA-token-value-1", "token [REDACTED]"},
		{`{"v":"ab\"cd\\ef-quoted"}`, `{"v":"[REDACTED]"}`},
		{"feature on at /home/ava with vim", "feature on at /home/ava with vim"},
	} {
		if got := r.String(tc.in); got != tc.want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"ANTHROPIC_API_KEY": true, "AVA_TOKEN": true, "TELEGRAM_BOT_TOKEN": true, "MY_SERVICE_PASS": true,
		"SECRET_KEY_BASE": true, "DB_PASSWORD": true, "PGPASSWORD": true, "aws_secret_access_key": true,
		"HOME": false, "PATH": false, "KEYBOARD": false, "TOKENIZERS_PARALLELISM": false, "PASSENGER_HOME": false,
		"DATABASE_URL": false, "GITHUB_TOKEN": true, "X_SECRET": true, "MY_APIKEY": true, "BRAVE_API_KEY": true,
		"AVA_WORKSPACE": false,
	} {
		if got := SecretName(name); got != want {
			t.Errorf("SecretName(%s) = %v, want %v", name, got, want)
		}
	}
}

// TestJSONStaysValid checks that masking secrets inside JSON strings
// keeps the document valid, the PEM block's escaped newlines included.
func TestJSONStaysValid(t *testing.T) {
	text := strings.Join([]string{awsKeyID, awsSecret, ghToken, slackToken, jwt, pemBlock,
		"https://u:pw123456@h/x", "X_TOKEN=abcdefgh"}, "\n")
	doc, err := json.Marshal(map[string]any{"output": text, "n": 1, "more": []string{pemBlock, "tail"}})
	if err != nil {
		t.Fatal(err)
	}
	out := New(Options{}).Redact(doc)
	var back map[string]any
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("masked JSON is invalid: %v\n%s", err, out)
	}
	for _, s := range []string{awsKeyID, ghToken, slackToken, jwt, "MIIEowIBAAKCAQEA", "pw123456", "abcdefgh"} {
		if strings.Contains(string(out), s) {
			t.Errorf("%q survived: %s", s, out)
		}
	}
	if back["more"].([]any)[1] != "tail" {
		t.Errorf("the string after the PEM block was eaten: %s", out)
	}
}

func TestNilRedactor(t *testing.T) {
	var r *Redactor
	if got := r.String("sk-abcdefghijklmnopqrstu"); got != "sk-abcdefghijklmnopqrstu" {
		t.Errorf("nil redactor changed the text: %s", got)
	}
}

// TestNeedleMatchesContains compares the rare-byte search with
// bytes.Contains on needles whose rarest byte is first, last and inside,
// at every position of a text.
func TestNeedleMatchesContains(t *testing.T) {
	for _, s := range []string{"Xsecret", "secretX", "secXret", "seeeeet", "AKIA", "a"} {
		n := newNeedle(s)
		for _, text := range []string{"", s, "the " + s, s + " end", "x" + s[:len(s)-1], s[1:] + "x", "the secret is here",
			strings.Repeat("e", 40) + s, s[:len(s)/2]} {
			if got, want := n.in([]byte(text)), strings.Contains(text, s); got != want {
				t.Errorf("needle %q (rare at %d) in %q = %v, want %v", s, n.at, text, got, want)
			}
		}
	}
}

// TestURLShowsSchemeAndHostOnly: a webhook's path, query, fragment and
// user are never shown; what is not a URL with a host shows as
// [REDACTED].
func TestURLShowsSchemeAndHostOnly(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://hooks.slack.com/services/T0/B0/SECRET?token=tok&api_key=key", "https://hooks.slack.com/…"},
		{"https://discord.com/api/webhooks/123/abcDEF-token", "https://discord.com/…"},
		{"http://127.0.0.1:8080/hook#frag", "http://127.0.0.1:8080/…"},
		{"https://example.com?token=x", "https://example.com/…"},
		{"https://example.com/", "https://example.com/…"},
		{"https://example.com", "https://example.com"},
		{"https://bob:pw@example.com", "https://example.com"},
		{"http://[::1]:7/x", "http://[::1]:7/…"},
		{"example.com/path/secret", Redacted},
		{"not a url at all", Redacted},
		{"", Redacted},
		{"https://exa mple.com/secret", Redacted},
	} {
		got := URL(tc.in)
		if got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.Contains(got, "SECRET") || strings.Contains(got, "token") || strings.Contains(got, "pw") {
			t.Errorf("URL(%q) = %q shows a secret", tc.in, got)
		}
	}
}
