package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestShutdownUnderLoad: SIGTERM while clients are placing orders. The
// server exits 0, and every order it acknowledged is there after a restart.
func TestShutdownUnderLoad(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	var mu sync.Mutex
	acked := map[int64]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, u := range []*user{&userA, &userB} {
		wg.Add(1)
		go func(u *user) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Sprintf(`{"symbol":"BTCUSDT","orderList":[{"side":"BUY","type":"LIMIT","timeInForce":"GTC","quantity":"0.001","price":"%d"},{"side":"BUY","type":"LIMIT","timeInForce":"GTC","quantity":"0.001","price":"%d"}]}`, 100+i%50, 200+i%50)
				ts := strconv.FormatInt(time.Now().UnixMilli(), 10)
				hr, _ := http.NewRequest("POST", s.rest+"/api/v3/order/batch", strings.NewReader(body))
				hr.Header.Set("Content-Type", "application/json")
				hr.Header.Set("ACCESS-KEY", u.key)
				hr.Header.Set("ACCESS-PASSPHRASE", u.passph)
				hr.Header.Set("ACCESS-TIMESTAMP", ts)
				hr.Header.Set("ACCESS-SIGN", sign(u.secret, ts+"POST/api/v3/order/batch"+body))
				res, err := httpClient.Do(hr)
				if err != nil {
					return // the server went away
				}
				var b struct{ OrderList []struct{ OrderID int64 } }
				dec := json.NewDecoder(res.Body).Decode(&b)
				res.Body.Close()
				if res.StatusCode != 200 || dec != nil {
					continue // 503 while shutting down
				}
				mu.Lock()
				for _, o := range b.OrderList {
					if o.OrderID != 0 {
						acked[o.OrderID] = true
					}
				}
				mu.Unlock()
			}
		}(u)
	}
	time.Sleep(700 * time.Millisecond)
	s.stop() // requires exit status 0
	close(stop)
	wg.Wait()
	if len(acked) == 0 {
		t.Fatal("no order was acknowledged before the shutdown")
	}
	s2 := startServer(t, dir)
	found := map[int64]bool{}
	for _, u := range []*user{&userA, &userB} {
		for page := 1; ; page++ {
			var all []order
			s2.get(u, fmt.Sprintf("/api/v3/allOrders?symbol=BTCUSDT&limit=1000&page=%d", page), &all)
			for _, o := range all {
				found[o.OrderID] = true
			}
			if len(all) < 1000 {
				break
			}
		}
	}
	for id := range acked {
		if !found[id] {
			t.Errorf("acknowledged order %d lost in the restart", id)
		}
	}
	t.Logf("%d acknowledged orders, all present after restart", len(acked))
	s2.stop()
}
