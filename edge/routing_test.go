package edge

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRouting: the router answers by method and exact path; what matches
// no route is 404 -1000 or 405 -1150 (with Allow, never OPTIONS), weighed
// and reported like any request; nothing redirects, and HEAD and OPTIONS
// are not invented.
func TestRouting(t *testing.T) {
	s := openTestServer(t)
	for _, c := range []struct {
		method, uri string
		body        string
		status      int
		code        int    // of an error answer
		allow       string // of a 405
	}{
		{"GET", "/api/v3/time", "", 200, 0, ""},
		{"GET", "/api/v3/account", "", 200, 0, ""},
		{"GET", "/api/v3/account/", "", 200, 0, ""},
		{"POST", "/api/v3/account/", "{}", 405, codeMethod, "GET"},
		{"DELETE", "/api/v3/account", "", 405, codeMethod, "GET"},
		{"GET", "/api/v3/order/batch", "", 405, codeMethod, "DELETE, POST"},
		{"PUT", "/api/v3/order", "{}", 405, codeMethod, "DELETE, GET, POST"},
		{"HEAD", "/api/v3/time", "", 405, codeMethod, "GET"},
		{"OPTIONS", "/api/v3/time", "", 405, codeMethod, "GET"},
		{"GET", "/api/v3/time/", "", 404, codeUnknown, ""},
		{"GET", "/api/v3/Time", "", 404, codeUnknown, ""},
		{"GET", "/api/v3//time", "", 404, codeUnknown, ""},
		{"GET", "/api/v3/nothing", "", 404, codeUnknown, ""},
		{"POST", "/api/v3/nothing", strings.Repeat(" ", MaxBodyBytes+1), 413, codeParam, ""},
	} {
		ctx := signedCtx(c.method, c.uri, c.body)
		s.serveREST(ctx)
		r := &ctx.Response
		var e struct{ Code int }
		json.Unmarshal(r.Body(), &e)
		if r.StatusCode() != c.status || e.Code != c.code || string(r.Header.Peek("Allow")) != c.allow {
			t.Errorf("%s %s: got %d %s Allow %q, want %d code %d Allow %q", c.method, c.uri, r.StatusCode(), r.Body(), r.Header.Peek("Allow"), c.status, c.code, c.allow)
		}
		if len(r.Header.Peek("X-USED-WEIGHT-IP-10S")) == 0 {
			t.Errorf("%s %s: no X-USED-WEIGHT-IP-10S", c.method, c.uri)
		}
	}
	for _, c := range []struct {
		method, uri string
		token       bool
		status      int
	}{
		{"GET", "/admin/v1/state", true, 200},
		{"POST", "/admin/v1/state", true, 405},
		{"GET", "/admin/v1/nothing", true, 404},
		{"GET", "/admin/v1/nothing", false, 401},
		{"GET", "/admin/v1/state/", true, 404},
	} {
		ctx := requestCtx(c.method, c.uri, "")
		if c.token {
			ctx.Request.Header.SetBytesV("X-Admin-Token", s.adminToken)
		}
		s.serveAdmin(ctx)
		if got := ctx.Response.StatusCode(); got != c.status {
			t.Errorf("admin %s %s (token %v): got %d %s, want %d", c.method, c.uri, c.token, got, ctx.Response.Body(), c.status)
		}
	}
}
