package engine

// cancel cancels one of the user's working orders, by id or client id.
func (e *Engine) cancel(c *Cmd) Reject {
	m := e.market(c.Market)
	if m == nil {
		return RejectUnknownMarket
	}
	h := e.lookup(m, c.User, c.OrderID, c.Text.Bytes())
	if h == 0 {
		return RejectUnknownOrder
	}
	e.remove(m, h, e.pool.get(h), StatusCanceled)
	e.out.OrderAt = len(e.out.Updates)
	return OK
}

// lookup finds user u's working order in m by id, or by client id when id
// is 0. Another user's order is not found.
func (e *Engine) lookup(m *market, u UserIdx, id int64, cid []byte) handle {
	if id != 0 {
		h := m.ids.get(&e.pool, id)
		if h == 0 || e.pool.get(h).user != u {
			return 0
		}
		return h
	}
	if len(cid) == 0 {
		return 0
	}
	if h := m.findCID(&e.pool, cidHash(u, cid), u, cid); h != 0 {
		return h
	}
	// A generated id is not indexed: it names its order.
	if gid, ok := generatedForm(cid); ok {
		if h := m.ids.get(&e.pool, gid); h != 0 {
			if o := e.pool.get(h); o.user == u && o.cidGen {
				return h
			}
		}
	}
	return 0
}

// cancelAll cancels every working order of the user in the market, oldest
// first. It succeeds (with no updates) when there is none.
func (e *Engine) cancelAll(c *Cmd) Reject {
	m := e.market(c.Market)
	if m == nil {
		return RejectUnknownMarket
	}
	ul := m.list(c.User)
	if ul == nil {
		return OK
	}
	for h := ul.head; h != 0; {
		o := e.pool.get(h)
		next := e.pool.ln(h).unext
		e.remove(m, h, o, StatusCanceled)
		h = next
	}
	return OK
}

func (e *Engine) checkCoin(c *Cmd) Reject {
	if !e.acc.ValidCoin(c.Coin) {
		return RejectUnknownCoin
	}
	if !e.acc.Valid(c.User, c.UID) {
		return RejectUnknownUser
	}
	if c.Amount <= 0 {
		return RejectInvalidAmount
	}
	return OK
}

// deposit credits the user. The credit to available waits for Flush.
func (e *Engine) deposit(c *Cmd) Reject {
	if r := e.checkCoin(c); r != OK {
		return r
	}
	if e.acc.Net(c.Coin) > maxSupply-c.Amount {
		// Every balance is part of the coin's supply, so capping the supply
		// keeps every cell, the fee account's included, far from overflow.
		// Only the ledger shard changes Net, so the check cannot race.
		return RejectOverflow
	}
	e.out.BillID = BillID(e.seq, e.nbills, e.shard)
	e.bill(c.User, c.Coin, BizDeposit, c.Amount, 0, 0, 0, 0)
	e.credit(c.User, c.Coin, c.Amount)
	e.acc.net[c.Coin.Spot()].Add(int64(c.Amount))
	return OK
}

// maxSupply bounds deposits minus withdrawals of one coin (about 4.6e18
// units: 46 billion coins at scale 8).
const maxSupply Amount = 1 << 62

// withdraw debits the user if enough is available (a recorded decision).
func (e *Engine) withdraw(c *Cmd) Reject {
	if r := e.checkCoin(c); r != OK {
		return r
	}
	if !e.reserve(c, c.User, c.Coin, c.Amount) {
		return RejectInsufficientBalance
	}
	e.out.BillID = BillID(e.seq, e.nbills, e.shard)
	e.bill(c.User, c.Coin, BizWithdraw, -c.Amount, 0, 0, 0, 0)
	e.acc.net[c.Coin.Spot()].Add(-int64(c.Amount))
	return OK
}

// addUser registers c.UID. Only the ledger shard applies it.
func (e *Engine) addUser(c *Cmd) Reject {
	if c.UID <= 0 {
		return RejectUnknownUser
	}
	rate := int64(c.Amount)
	if rate < 0 || rate > RateOne || rate != 0 && !c.Broker {
		return RejectInvalidAmount
	}
	u, ok := e.acc.addUser(c.UID, c.Broker, c.Referrer, rate)
	if !ok {
		return RejectUserExists
	}
	c.User = u
	return OK
}
