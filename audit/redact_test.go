package audit

import "testing"

func TestRedactor(t *testing.T) {
	r := NewRedactor([]string{"", "short", "AVA-token-value-1", "tvly-XYZ12345"})
	for _, tc := range []struct{ in, want string }{
		{`{"text":"key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv-_0"}`, `{"text":"key [REDACTED]"}`},
		{`{"text":"sk-proj-abcdefghijklmnop1234 and sk-or-v1-0123456789abcdef0123"}`, `{"text":"[REDACTED] and [REDACTED]"}`},
		{`{"text":"line\nsk-abcdefghijklmnopqrstu"}`, `{"text":"line\n[REDACTED]"}`},
		{`{"h":"Authorization: Bearer abc.DEF-123_xyz=="}`, `{"h":"Authorization: Bearer [REDACTED]"}`},
		{`{"h":"authorization: bearer abcdefgh12345678"}`, `{"h":"authorization: bearer [REDACTED]"}`},
		{`{"u":"https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe"}`, `{"u":"https://api.telegram.org/bot[REDACTED]/getMe"}`},
		{`{"t":"123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"}`, `{"t":"[REDACTED]"}`},
		{`{"env":"AVA_TOKEN=AVA-token-value-1","k":"tvly-XYZ12345"}`, `{"env":"AVA_TOKEN=[REDACTED]","k":"[REDACTED]"}`},
		// Ordinary text is left alone.
		{`{"text":"the task-force asked a short question at 14:05:30"}`, `{"text":"the task-force asked a short question at 14:05:30"}`},
		{`{"text":"risk-management","n":1234567}`, `{"text":"risk-management","n":1234567}`},
		{`{"text":"bearer of bad news"}`, `{"text":"bearer of bad news"}`},
	} {
		if got := r.RedactString(tc.in); got != tc.want {
			t.Errorf("Redact(%s)\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
	var nilR *Redactor
	if got := nilR.RedactString("sk-abcdefghijklmnopqrstu"); got != "sk-abcdefghijklmnopqrstu" {
		t.Errorf("nil redactor changed the line: %s", got)
	}
}
