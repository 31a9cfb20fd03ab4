package edge

import (
	"encoding/json"
	"strings"
	"testing"
)

// adminDo serves one admin request with the token and returns its status
// and error body.
func adminDo(t *testing.T, s *Server, method, uri, body string) (int, apiErrBody, string) {
	t.Helper()
	ctx := requestCtx(method, uri, body)
	ctx.Request.Header.SetBytesV("X-Admin-Token", s.adminToken)
	s.serveAdmin(ctx)
	var e apiErrBody
	json.Unmarshal(ctx.Response.Body(), &e)
	return ctx.Response.StatusCode(), e, string(ctx.Response.Body())
}

type apiErrBody struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
}

// TestAdminBodyStrict: admin bodies are decoded by goccy/go-json refusing
// unknown fields (-1135), and the answer names the field the client sent,
// even where goccy's own message names another (a prefix of a declared
// field: "ui" for "uid").
func TestAdminBodyStrict(t *testing.T) {
	s := openTestServer(t)
	for _, c := range []struct {
		body string
		want string // in the message
	}{
		{`{"uid":10001,"coin":"USDT","amount":"5","memo":"x"}`, "memo: unknown key"},
		{`{"ui":10001,"coin":"USDT","amount":"5"}`, "ui: unknown key"},
		{`{"uid":"10001","coin":"USDT","amount":"5"}`, "uid: "},
		{`{"uid":10001,"coin":"USDT","amount":"5"} {}`, "data after the top-level value"},
		{`{"uid":10001,`, "invalid JSON"},
		{``, "invalid JSON"},
	} {
		status, e, raw := adminDo(t, s, "POST", "/admin/v1/deposit", c.body)
		if status != 400 || e.Code != codeJSON || !strings.Contains(e.Msg, c.want) {
			t.Errorf("%s: got %d %s, want 400 %d containing %q", c.body, status, raw, codeJSON, c.want)
		}
	}
	if status, _, raw := adminDo(t, s, "POST", "/admin/v1/deposit", `{"uid":10001,"coin":"USDT","amount":"5"}`); status != 200 || !strings.Contains(raw, "billId") {
		t.Errorf("valid deposit: got %d %s", status, raw)
	}
	if status, _, raw := adminDo(t, s, "POST", "/admin/v1/users", `{"referrer":10001}`); status != 400 || !strings.Contains(raw, "referrer: unknown key") {
		t.Errorf("user with an unknown field: got %d %s", status, raw)
	}
}
