package load

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// Admin talks to the server's admin API (SPEC §1).
type Admin struct {
	Addr  string // host:port
	Token string
	c     fasthttp.Client
}

func (a *Admin) post(path string, body any, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + a.Addr + path)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.Header.Set("X-Admin-Token", a.Token)
	req.SetBody(b)
	if err := a.c.DoTimeout(req, resp, 30*time.Second); err != nil {
		return fmt.Errorf("load: admin %s: %v", path, err)
	}
	if resp.StatusCode() != fasthttp.StatusOK {
		return fmt.Errorf("load: admin %s: HTTP %d: %s", path, resp.StatusCode(), sample(resp.Body()))
	}
	if out != nil {
		if err := json.Unmarshal(resp.Body(), out); err != nil {
			return fmt.Errorf("load: admin %s: %v in %s", path, err, sample(resp.Body()))
		}
	}
	return nil
}

// CreateUser creates a user and returns its credentials.
func (a *Admin) CreateUser() (Cred, error) {
	var r struct {
		UID        json.Number `json:"uid"`
		APIKey     string      `json:"apiKey"`
		SecretKey  string      `json:"secretKey"`
		Passphrase string      `json:"passphrase"`
	}
	if err := a.post("/admin/v1/users", map[string]any{}, &r); err != nil {
		return Cred{}, err
	}
	uid, err := strconv.ParseInt(r.UID.String(), 10, 64)
	if err != nil || r.APIKey == "" || r.SecretKey == "" {
		return Cred{}, fmt.Errorf("load: admin users: bad answer uid=%q apiKey=%q", r.UID, r.APIKey)
	}
	return Cred{UID: uid, APIKey: r.APIKey, SecretKey: r.SecretKey, Passphrase: r.Passphrase}, nil
}

// Deposit credits amount of coin to uid.
func (a *Admin) Deposit(uid int64, coin, amount string) error {
	return a.post("/admin/v1/deposit", map[string]any{"uid": uid, "coin": coin, "amount": amount}, nil)
}

// Deposit is one coin amount credited to every created user.
type Deposit struct{ Coin, Amount string }

// CreateUsers creates n users with conc parallel requests and credits each
// with deposits.
func (a *Admin) CreateUsers(n, conc int, deposits []Deposit) ([]Cred, error) {
	if conc <= 0 {
		conc = 8
	}
	out := make([]Cred, n)
	errs := make(chan error, conc)
	var wg sync.WaitGroup
	jobs := make(chan int)
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				c, err := a.CreateUser()
				if err == nil {
					for _, d := range deposits {
						if err = a.Deposit(c.UID, d.Coin, d.Amount); err != nil {
							break
						}
					}
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					continue
				}
				out[i] = c
			}
		}()
	}
	for i := 0; i < n; i++ {
		jobs <- i
		if len(errs) > 0 {
			break
		}
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		return nil, err
	default:
	}
	return out, nil
}
