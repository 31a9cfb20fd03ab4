// Package edge is the exchange's REST edge: it turns HTTP requests into
// journaled engine commands and queries, and their results into JSON.
//
// The path of one request (DESIGN.md):
//
//	fasthttp -> route (fasthttp/router: method and exact path, no
//	            allocation; 404 and 405 from its NotFound and
//	            MethodNotAllowed, through the same limits as a route)
//	         -> IP rate limit -> HMAC authentication (key table behind an
//	            atomic pointer: lock- and allocation-free) -> UID rate limit
//	         -> decode the body with an allocation-free scanner into a pooled
//	            reqState, parse decimals to ticks/steps with the market spec
//	         -> fill pooled core.Requests, Submit all, then Wait (durable)
//	         -> encode with append-style writers into the pooled buffer
//
// Invariants:
//   - a response to a command is written only after Request.Wait returned
//     nil: the command is synced to the journal;
//   - bad input never reaches the engine unvalidated and never panics (a
//     recover answers 500 as a last resort);
//   - engine rejects map to HTTP status and code in one table (errors.go);
//   - a request refused by a rate limit is not executed and not counted;
//   - every REST answer is observed once, under its route and status,
//     without allocating (metrics.go).
//
// The admin listener serves the admin API and the operators' endpoints
// (GET /metrics, /healthz, /readyz); it serves from before Start, the
// admin API only after it.
//
// docs/API.md documents the endpoints and every decision the specification
// left open.
package edge
