package main

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binPath is the server binary built once by TestMain.
var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "exchanged-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "exchanged")
	out, err := exec.Command("go", "build", "-buildvcs=false", "-tags", serverTags, "-o", binPath, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building exchanged: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is one running exchanged process.
type server struct {
	t         *testing.T
	cmd       *exec.Cmd
	dataDir   string
	rest      string // http://127.0.0.1:port
	admin     string
	log       *logBuf
	exited    chan error
	extraArgs []string
}

var readyRE = regexp.MustCompile(`ready rest=(\S+) admin=(\S+)`)

// logBuf is a server's stderr, written by its reader while tests read it.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) WriteString(s string) {
	l.mu.Lock()
	l.b.WriteString(s)
	l.mu.Unlock()
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitLog waits until the server's log holds text.
func (s *server) waitLog(t *testing.T, text string, within time.Duration) {
	t.Helper()
	end := time.Now().Add(within)
	for !strings.Contains(s.log.String(), text) {
		if time.Now().After(end) {
			t.Fatalf("no %q in the log after %v\n%s", text, within, s.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startServer starts the binary on free loopback ports with the test config.
func startServer(t *testing.T, dataDir string, extra ...string) *server {
	t.Helper()
	return startServerConfig(t, "testdata/e2e.json", dataDir, extra...)
}

func startServerConfig(t *testing.T, config, dataDir string, extra ...string) *server {
	t.Helper()
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	args := append([]string{"-config", config, "-data", dataDir,
		"-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0"}, extra...)
	cmd := exec.Command(binPath, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, cmd: cmd, dataDir: dataDir, log: &logBuf{}, exited: make(chan error, 1), extraArgs: extra}
	ready := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			s.log.WriteString(line + "\n")
			if m := readyRE.FindStringSubmatch(line); m != nil {
				select { // a member that rebuilt in place is ready again
				case ready <- [2]string{m[1], m[2]}:
				default:
				}
			}
		}
		s.exited <- cmd.Wait()
	}()
	select {
	case a := <-ready:
		s.rest, s.admin = "http://"+a[0], "http://"+a[1]
	case err := <-s.exited:
		t.Fatalf("exchanged exited before ready: %v\n%s", err, s.log)
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("exchanged not ready after 60s\n%s", s.log)
	}
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.stop()
		}
	})
	return s
}

// stop sends SIGTERM and requires a clean exit.
func (s *server) stop() {
	s.t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.exited:
		if err != nil {
			s.t.Errorf("exchanged exit: %v\n%s", err, s.log)
		}
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		s.t.Fatalf("exchanged did not stop within 30s\n%s", s.log)
	}
}

// user holds API credentials.
type user struct {
	uid                 int64
	key, secret, passph string
}

var (
	userA    = user{10001, "key-a", "secret-a", "pass-a"}
	userB    = user{10002, "key-b", "secret-b", "pass-b"}
	userC    = user{10003, "key-c", "secret-c", "pass-c"}
	userCCXT = user{10004, "key-ccxt", "secret-ccxt", "pass-ccxt"}
)

// req describes one HTTP request; zero fields mean "as a client does".
type req struct {
	method, path, body string // path includes "?query"
	u                  *user
	contentType        *string           // nil: application/json on POST/DELETE
	headers            map[string]string // overrides after signing ("" deletes)
	signSecret         string            // sign with this secret instead
	signPayload        *string           // sign exactly this payload (after the timestamp)
	ts                 *int64
	admin              bool
	noToken            bool
}

type resp struct {
	status int
	body   []byte
	hdr    http.Header
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

func sign(secret, payload string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(payload))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func (s *server) do(r req) resp {
	s.t.Helper()
	base := s.rest
	if r.admin {
		base = s.admin
	}
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr, err := http.NewRequest(r.method, base+r.path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	if r.contentType != nil {
		if *r.contentType != "" {
			hr.Header.Set("Content-Type", *r.contentType)
		}
	} else if r.method == "POST" || r.method == "DELETE" {
		hr.Header.Set("Content-Type", "application/json")
	}
	if r.admin && !r.noToken {
		hr.Header.Set("X-Admin-Token", "test-admin")
	}
	if r.u != nil {
		ts := time.Now().UnixMilli()
		if r.ts != nil {
			ts = *r.ts
		}
		tss := strconv.FormatInt(ts, 10)
		payload := r.method + r.path + r.body
		if r.signPayload != nil {
			payload = *r.signPayload
		}
		secret := r.u.secret
		if r.signSecret != "" {
			secret = r.signSecret
		}
		hr.Header.Set("ACCESS-KEY", r.u.key)
		hr.Header.Set("ACCESS-SIGN", sign(secret, tss+payload))
		hr.Header.Set("ACCESS-PASSPHRASE", r.u.passph)
		hr.Header.Set("ACCESS-TIMESTAMP", tss)
	}
	for k, v := range r.headers {
		if v == "" {
			hr.Header.Del(k)
		} else {
			hr.Header.Set(k, v)
		}
	}
	res, err := httpClient.Do(hr)
	if err != nil {
		s.t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{res.StatusCode, b, res.Header}
}

// ok performs r and requires HTTP 200, decoding the body into v.
func (s *server) ok(r req, v any) []byte {
	s.t.Helper()
	res := s.do(r)
	if res.status != 200 {
		s.t.Fatalf("%s %s %s: got %d %s, want 200", r.method, r.path, r.body, res.status, res.body)
	}
	if v != nil {
		if err := json.Unmarshal(res.body, v); err != nil {
			s.t.Fatalf("%s %s: decoding %s: %v", r.method, r.path, res.body, err)
		}
	}
	return res.body
}

func (s *server) get(u *user, path string, v any) []byte {
	s.t.Helper()
	return s.ok(req{method: "GET", path: path, u: u}, v)
}

func (s *server) post(u *user, path, body string, v any) []byte {
	s.t.Helper()
	return s.ok(req{method: "POST", path: path, body: body, u: u}, v)
}

func (s *server) del(u *user, path string, v any) []byte {
	s.t.Helper()
	return s.ok(req{method: "DELETE", path: path, u: u}, v)
}

func (s *server) stateHash() string {
	s.t.Helper()
	var st struct {
		Hash string `json:"hash"`
	}
	s.ok(req{method: "GET", path: "/admin/v1/state", admin: true}, &st)
	if st.Hash == "" {
		s.t.Fatal("empty state hash")
	}
	return st.Hash
}

// order is the spot order record (docs/API.md, "Spot trading").
type order struct {
	Symbol              string `json:"symbol"`
	OrderID             int64  `json:"orderId"`
	ClientOrderID       string `json:"clientOrderId"`
	Price               string `json:"price"`
	OrigQty             string `json:"origQty"`
	ExecutedQty         string `json:"executedQty"`
	CummulativeQuoteQty string `json:"cummulativeQuoteQty"`
	Status              string `json:"status"`
	TimeInForce         string `json:"timeInForce"`
	Type                string `json:"type"`
	Side                string `json:"side"`
	Time                int64  `json:"time"`
	UpdateTime          int64  `json:"updateTime"`
	IsWorking           bool   `json:"isWorking"`
	TransactTime        int64  `json:"transactTime"`
}

type apiErr struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
}

func strp(s string) *string { return &s }
func i64p(v int64) *int64   { return &v }
