package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A three-node group on loopback (docs/REPLICATION.md): three real
// processes, a client placing orders at a steady rate and following
// X-LEADER, the leader killed with SIGKILL. Every acknowledged order must be
// on the new leader, and once the old leader is restarted and has caught
// up, all three state hashes must be equal.

// cluster is three members' processes and their addresses.
type cluster struct {
	t       *testing.T
	ids     []uint64
	rest    map[uint64]string // host:port
	nodes   map[uint64]*server
	dirs    map[uint64]string
	args    map[uint64][]string
	clients *http.Client
	last    uint64 // the leader last found
}

// revive restarts the members that exited with 75 on their own (a leader
// deposed by a spurious election on a loaded machine, a member that
// installed a snapshot), as their supervisor would. Members a test stops
// itself are waited for there, so their exit is not seen here.
func (c *cluster) revive() {
	c.t.Helper()
	for _, id := range c.ids {
		s := c.nodes[id]
		if s == nil {
			continue
		}
		select {
		case err := <-s.exited:
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 75 {
				c.t.Fatalf("member %d exited with %v\n%s", id, err, s.log)
			}
			c.t.Logf("member %d exited 75 (deposed or snapshot installed): restarting it", id)
			c.start(id)
		default:
		}
	}
}

// freePorts returns n loopback ports free at the time of the call. They
// are taken below Linux's ephemeral range (32768 and up), from which every
// other test's ":0" listener and outgoing connection draws: a port freed
// here and bound again by the node is then not one the kernel hands to
// someone else in between (a cluster test failed once in CI that way).
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var ls []net.Listener
	var out []string
	for tries := 0; len(out) < n; tries++ {
		if tries > 1000 {
			t.Fatal("no free port below 32768")
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000)))
		if err != nil {
			continue
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}

func startCluster(t *testing.T, extra ...string) *cluster {
	t.Helper()
	ports := freePorts(t, 9)
	c := &cluster{t: t, ids: []uint64{1, 2, 3}, rest: map[uint64]string{}, nodes: map[uint64]*server{},
		dirs: map[uint64]string{}, args: map[uint64][]string{}, clients: &http.Client{Timeout: 10 * time.Second}}
	var peers, rest []string
	for i, id := range c.ids {
		c.rest[id] = ports[i]
		peers = append(peers, fmt.Sprintf("%d=%s", id, ports[3+i]))
		rest = append(rest, fmt.Sprintf("%d=%s", id, ports[i]))
	}
	for _, id := range c.ids {
		c.dirs[id] = t.TempDir()
		// fixed admin ports too: a member that rebuilds in place binds the same again
		c.args[id] = []string{"-listen", c.rest[id], "-admin-listen", ports[6+indexOf(c.ids, id)], "-node-id", strconv.FormatUint(id, 10),
			"-peers", strings.Join(peers, ","), "-peer-rest", strings.Join(rest, ","),
			"-replica-secret", "cluster-test-secret-0123456789", "-shards", "2"}
		c.args[id] = append(c.args[id], extra...)
	}
	for _, id := range c.ids {
		c.start(id)
	}
	return c
}

func (c *cluster) start(id uint64) {
	c.nodes[id] = startServer(c.t, c.dirs[id], c.args[id]...)
}

// waitServing waits until member id's REST listener answers again (a
// rebuilding member re-executes itself and replays first).
func (c *cluster) waitServing(id uint64, within time.Duration) {
	c.t.Helper()
	end := time.Now().Add(within)
	for time.Now().Before(end) {
		if _, err := c.try(c.rest[id], "GET", "/api/v3/market/time", "", nil); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("member %d does not answer after %v\n%s", id, within, c.nodes[id].log.String())
}

// leader waits until one member takes signed requests and returns it.
func (c *cluster) leader(within time.Duration) uint64 {
	c.t.Helper()
	end := time.Now().Add(within)
	for time.Now().Before(end) {
		c.revive()
		for _, id := range c.ids {
			s := c.nodes[id]
			if s == nil || s.cmd.ProcessState != nil {
				continue
			}
			res, err := c.try(c.rest[id], "GET", "/api/v3/account", "", &userA)
			if err == nil && res.status == 200 {
				c.last = id
				return id
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("no leader within %v", within)
	return 0
}

// try sends one signed request to the REST address addr; a transport
// error is returned, not fatal (the node may be dead).
func (c *cluster) try(addr, method, path, body string, u *user) (resp, error) {
	hr, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		return resp{}, err
	}
	if method == "POST" {
		hr.Header.Set("Content-Type", "application/json")
	}
	if u != nil {
		tss := strconv.FormatInt(time.Now().UnixMilli(), 10)
		hr.Header.Set("ACCESS-KEY", u.key)
		hr.Header.Set("ACCESS-SIGN", sign(u.secret, tss+method+path+body))
		hr.Header.Set("ACCESS-PASSPHRASE", u.passph)
		hr.Header.Set("ACCESS-TIMESTAMP", tss)
	}
	res, err := c.clients.Do(hr)
	if err != nil {
		return resp{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return resp{res.StatusCode, b, res.Header}, err
}

// metric returns the value of the unlabelled metric name on member id's
// admin /metrics ("" if absent).
func (c *cluster) metric(id uint64, name string) string {
	hr, _ := http.NewRequest("GET", c.nodes[id].admin+"/metrics", nil)
	hr.Header.Set("X-Admin-Token", "test-admin")
	res, err := c.clients.Do(hr)
	if err != nil {
		c.t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return v
		}
	}
	return ""
}

// hashes returns each running member's state hash and sequences.
func (c *cluster) hashes() map[uint64]string {
	out := map[uint64]string{}
	for _, id := range c.ids {
		s := c.nodes[id]
		if s == nil || s.cmd.ProcessState != nil {
			continue
		}
		hr, _ := http.NewRequest("GET", s.admin+"/admin/v1/state", nil)
		hr.Header.Set("X-Admin-Token", "test-admin")
		res, err := c.clients.Do(hr)
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == 200 {
			out[id] = string(b)
		}
	}
	return out
}

// waitEqual waits until every member reports the same state.
func (c *cluster) waitEqual(within time.Duration) string {
	c.t.Helper()
	end := time.Now().Add(within)
	var h map[uint64]string
	for time.Now().Before(end) {
		c.revive()
		h = c.hashes()
		if len(h) == len(c.ids) && h[1] == h[2] && h[2] == h[3] {
			return h[1]
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("states not equal within %v: %v", within, h)
	return ""
}

type acked struct {
	id     int64
	symbol string
	u      *user
}

// stream places orders one after another until stop closes, following
// X-LEADER, and returns the acknowledged ones. Buys and sells of two users
// at one price, so that most fill.
//
// It starts at the leader last found (leader).
func (c *cluster) stream(stop <-chan struct{}, gap time.Duration) (acks []acked, refused int) {
	target := c.last
	for i := 0; ; i++ {
		select {
		case <-stop:
			return acks, refused
		default:
		}
		side, u := "BUY", &userA
		if i%2 == 1 {
			side, u = "SELL", &userB
		}
		body := placeBody("BTCUSDT", side, "LIMIT", "0.001", "100", fmt.Sprintf(`,"newClientOrderId":"cl-%d"`, i))
		res, err := c.try(c.rest[target], "POST", "/api/v3/order", body, u)
		switch {
		case err != nil:
			target = c.ids[(indexOf(c.ids, target)+1)%len(c.ids)]
			refused++
			time.Sleep(20 * time.Millisecond)
		case res.status == 200:
			var o order
			if err := json.Unmarshal(res.body, &o); err != nil || o.OrderID == 0 {
				c.t.Errorf("ack %s: %v", res.body, err)
				return acks, refused
			}
			acks = append(acks, acked{o.OrderID, "BTCUSDT", u})
		case res.status == 503:
			refused++
			if l := res.hdr.Get("X-LEADER"); l != "" && l != c.rest[target] {
				for _, id := range c.ids {
					if c.rest[id] == l {
						target = id
					}
				}
			} else {
				target = c.ids[(indexOf(c.ids, target)+1)%len(c.ids)]
				time.Sleep(20 * time.Millisecond)
			}
		case res.status == 500 && strings.Contains(string(res.body), "-1000"):
			// In flight when the leader lost its quorum or leadership:
			// not acknowledged, and it may or may not be applied.
			refused++
		default:
			c.t.Errorf("place: %d %s", res.status, res.body)
			return acks, refused
		}
		time.Sleep(gap)
	}
}

func indexOf(ids []uint64, id uint64) int {
	for i, v := range ids {
		if v == id {
			return i
		}
	}
	return 0
}

// clusterIterations is how many leader kills one test run does: a few
// under make test, more under make soak (EXCHANGED_CLUSTER_KILLS).
func clusterIterations() int {
	if v, err := strconv.Atoi(os.Getenv("EXCHANGED_CLUSTER_KILLS")); err == nil && v > 0 {
		return v
	}
	return 2
}

func TestClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("three processes")
	}
	c := startCluster(t)
	lead := c.leader(20 * time.Second)
	// Followers refuse writes with 503 -1054 and name the leader.
	for _, id := range c.ids {
		if id == lead {
			continue
		}
		res, err := c.try(c.rest[id], "POST", "/api/v3/order", placeBody("BTCUSDT", "BUY", "LIMIT", "0.001", "100", ""), &userA)
		if err != nil || res.status != 503 || !strings.Contains(string(res.body), "-1054") || res.hdr.Get("X-LEADER") != c.rest[lead] {
			t.Fatalf("follower %d: %v %d %s X-LEADER=%q, want 503 -1054 X-LEADER=%s", id, err, res.status, res.body, res.hdr.Get("X-LEADER"), c.rest[lead])
		}
		// ... and serve public reads.
		if res, err := c.try(c.rest[id], "GET", "/api/v3/market/depth?symbol=BTCUSDT", "", nil); err != nil || res.status != 200 {
			t.Fatalf("follower %d depth: %v %d %s", id, err, res.status, res.body)
		}
	}
	// The leader's /metrics names it and its followers' lag.
	hr, _ := http.NewRequest("GET", c.nodes[lead].admin+"/metrics", nil)
	hr.Header.Set("X-Admin-Token", "test-admin")
	if res, err := c.clients.Do(hr); err != nil {
		t.Fatal(err)
	} else {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		for _, want := range []string{"exchanged_replica_is_leader 1", fmt.Sprintf("exchanged_replica_leader %d", lead),
			`exchanged_replica_lag_entries{member="`, "exchanged_replica_transport_connects_total"} {
			if !strings.Contains(string(b), want) {
				t.Fatalf("leader's /metrics lacks %q", want)
			}
		}
	}
	var all []acked
	for it := 0; it < clusterIterations(); it++ {
		stop := make(chan struct{})
		done := make(chan struct{})
		var acks []acked
		var refused int
		go func() {
			acks, refused = c.stream(stop, 2*time.Millisecond)
			close(done)
		}()
		time.Sleep(time.Second)
		old := c.nodes[lead]
		t0 := time.Now()
		old.cmd.Process.Kill()
		<-old.exited
		newLead := c.leader(15 * time.Second)
		elected := time.Since(t0)
		time.Sleep(time.Second)
		close(stop)
		<-done
		if newLead == lead {
			t.Fatalf("iteration %d: the killed member %d still leads", it, lead)
		}
		all = append(all, acks...)
		// Every acknowledged order, of this round and the earlier ones,
		// is on the new leader.
		for _, a := range all {
			res, err := c.try(c.rest[newLead], "GET", fmt.Sprintf("/api/v3/order?symbol=%s&orderId=%d", a.symbol, a.id), "", a.u)
			if err != nil || res.status != 200 {
				t.Fatalf("iteration %d: acknowledged order %d not on the new leader %d: %v %d %s", it, a.id, newLead, err, res.status, res.body)
			}
		}
		t.Logf("iteration %d (%v): killed %d, %d led after %v; %d orders acknowledged, %d refused or lost in flight",
			it, time.Since(t0).Round(time.Millisecond), lead, newLead, elected.Round(time.Millisecond), len(acks), refused)
		// The old leader rejoins and catches up.
		t1 := time.Now()
		c.start(lead)
		h := c.waitEqual(30 * time.Second)
		t.Logf("iteration %d: old leader restarted, states equal after %v: %s", it, time.Since(t1).Round(time.Millisecond), h)
		lead = newLead
	}
	if len(all) == 0 {
		t.Fatal("no order acknowledged")
	}
}

// checkAcked requires every acknowledged order on member id.
func (c *cluster) checkAcked(id uint64, acks []acked) {
	c.t.Helper()
	for _, a := range acks {
		res, err := c.try(c.rest[id], "GET", fmt.Sprintf("/api/v3/order?symbol=%s&orderId=%d", a.symbol, a.id), "", a.u)
		if err != nil || res.status != 200 {
			c.t.Fatalf("acknowledged order %d not on member %d: %v %d %s", a.id, id, err, res.status, res.body)
		}
	}
}

// streamFor runs stream in the background; the function it returns stops
// it and returns its result.
func (c *cluster) streamFor(gap time.Duration) (stop func() ([]acked, int)) {
	st := make(chan struct{})
	done := make(chan struct{})
	var acks []acked
	var refused int
	go func() {
		acks, refused = c.stream(st, gap)
		close(done)
	}()
	return func() ([]acked, int) {
		close(st)
		<-done
		return acks, refused
	}
}

// A follower stopped with SIGSTOP while the leader goes on with the other
// one catches up when resumed.
func TestClusterFollowerPaused(t *testing.T) {
	if testing.Short() {
		t.Skip("three processes")
	}
	c := startCluster(t)
	lead := c.leader(20 * time.Second)
	f := c.ids[(indexOf(c.ids, lead)+1)%3]
	pause := 10 * time.Second
	stop := c.streamFor(2 * time.Millisecond)
	time.Sleep(500 * time.Millisecond)
	c.nodes[f].cmd.Process.Signal(syscall.SIGSTOP)
	time.Sleep(pause)
	c.nodes[f].cmd.Process.Signal(syscall.SIGCONT)
	time.Sleep(500 * time.Millisecond)
	acks, refused := stop()
	if refused > 0 {
		t.Errorf("%d orders refused with a quorum up", refused)
	}
	t0 := time.Now()
	h := c.waitEqual(30 * time.Second)
	t.Logf("%d orders acknowledged while member %d was stopped %v; caught up in %v: %s", len(acks), f, pause, time.Since(t0).Round(time.Millisecond), h)
	if now := c.leader(time.Second); now != lead {
		t.Errorf("leader changed from %d to %d", lead, now)
	}
	c.checkAcked(f, nil)
	c.checkAcked(lead, acks)
}

// With both followers down, writes are refused at once (503, or 500 for
// those in flight whose outcome is unknown) rather than hanging; nothing
// acknowledged is lost when they return.
func TestClusterNoQuorum(t *testing.T) {
	if testing.Short() {
		t.Skip("three processes")
	}
	c := startCluster(t)
	lead := c.leader(20 * time.Second)
	stop := c.streamFor(2 * time.Millisecond)
	time.Sleep(time.Second)
	for _, id := range c.ids {
		if id != lead {
			c.nodes[id].cmd.Process.Kill()
			<-c.nodes[id].exited
		}
	}
	t0 := time.Now()
	// The leader finds no quorum, answers what waits and rebuilds in
	// place: it re-executes itself (same process) from what is durable.
	c.nodes[lead].waitLog(t, "rebuilding in place", 10*time.Second)
	deposed := time.Since(t0)
	acks, _ := stop()
	c.waitServing(lead, 20*time.Second)
	// Alone, it knows no leader: a write is refused at once.
	for i := 0; i < 10; i++ {
		t1 := time.Now()
		res, err := c.try(c.rest[lead], "POST", "/api/v3/order", placeBody("BTCUSDT", "BUY", "LIMIT", "0.001", "100", ""), &userA)
		if err != nil || res.status != 503 || !strings.Contains(string(res.body), "-1054") {
			t.Fatalf("write without quorum: %v %d %s, want 503 -1054", err, res.status, res.body)
		}
		if d := time.Since(t1); d > time.Second {
			t.Fatalf("write without quorum answered after %v", d)
		}
	}
	for _, id := range c.ids {
		if id != lead {
			c.start(id)
		}
	}
	now := c.leader(20 * time.Second)
	c.checkAcked(now, acks)
	h := c.waitEqual(30 * time.Second)
	t.Logf("leader %d deposed %v after losing both followers; %d orders acknowledged before, all on %d after they returned: %s",
		lead, deposed.Round(time.Millisecond), len(acks), now, h)
}

// A member too far behind for the leader's log (compacted behind its
// snapshots) gets the leader's snapshot through raft, installs it, exits
// 75 to load it, and catches up from the entries after it.
func TestClusterSnapshotCatchUp(t *testing.T) {
	if testing.Short() {
		t.Skip("three processes")
	}
	c := startCluster(t, "-snapshot-every", "100", "-raft-keep", "20")
	lead := c.leader(20 * time.Second)
	f := c.ids[(indexOf(c.ids, lead)+1)%3]
	c.nodes[f].cmd.Process.Kill()
	<-c.nodes[f].exited
	stop := c.streamFor(2 * time.Millisecond)
	// users created while f is down: their credentials must reach it with
	// the snapshot, which covers their registration
	for range 3 {
		hr, _ := http.NewRequest("POST", c.nodes[lead].admin+"/admin/v1/users", strings.NewReader(`{}`))
		hr.Header.Set("X-Admin-Token", "test-admin")
		hr.Header.Set("Content-Type", "application/json")
		res, err := c.clients.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("create a user: %d %s", res.StatusCode, b)
		}
	}
	time.Sleep(2 * time.Second)
	acks, _ := stop()
	c.start(f)
	// it installs the snapshot and re-executes itself to load it
	c.nodes[f].waitLog(t, "rebuilding in place", 20*time.Second)
	if !strings.Contains(c.nodes[f].log.String(), "installed the leader's snapshot") {
		t.Fatalf("member %d rebuilt without installing a snapshot\n%s", f, c.nodes[f].log.String())
	}
	h := c.waitEqual(30 * time.Second)
	c.checkAcked(lead, acks)
	// (a follower holds the admin-created users' keys; the config's users
	// are registered by the edge of the member that leads)
	o := c.ids[(indexOf(c.ids, lead)+2)%3]
	a, b := c.metric(o, "exchanged_api_keys"), c.metric(f, "exchanged_api_keys")
	if n, _ := strconv.Atoi(a); a != b || n < 3 {
		t.Fatalf("API keys: member %d holds %s, member %d after the snapshot %s", o, a, f, b)
	}
	t.Logf("%d orders while member %d was down; it caught up through a snapshot: %s", len(acks), f, h)
}
