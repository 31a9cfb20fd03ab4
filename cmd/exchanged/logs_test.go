package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestStructuredLogs: every line the server writes is one slog text
// record (time, level, msg, key=value attributes), and no secret is in
// them: not the admin token, not a configured user's secret or passphrase,
// not the credentials an admin registration hands out.
func TestStructuredLogs(t *testing.T) {
	s := startServer(t, "")
	var nu struct{ SecretKey, Passphrase string }
	s.ok(req{method: "POST", path: "/admin/v1/users", body: `{}`, admin: true}, &nu)
	s.get(&userA, "/api/v3/account", nil)
	s.stop()
	log := s.log.String()
	for _, line := range strings.Split(strings.TrimSuffix(log, "\n"), "\n") {
		if strings.HasPrefix(line, "SCHED ") {
			continue // the runtime's schedtrace (sysmon.go), once per ~24.8 days
		}
		if !strings.HasPrefix(line, "time=") || !strings.Contains(line, " level=") || !strings.Contains(line, " msg=") {
			t.Errorf("not a slog text record: %q", line)
		}
	}
	for _, want := range []string{"msg=starting ", "msg=ready rest=", `msg="shutting down" signal=terminated`, "msg=stopped"} {
		if !strings.Contains(log, want) {
			t.Errorf("no %q in the log", want)
		}
	}
	secrets := []string{"test-admin", userA.secret, userA.passph, nu.SecretKey, nu.Passphrase}
	for _, secret := range secrets {
		if secret == "" || strings.Contains(log, secret) {
			b, _ := json.Marshal(secret)
			t.Errorf("secret %s in the log:\n%s", b, log)
		}
	}
}
