package edge

import (
	"bytes"
	"fmt"

	"github.com/valyala/fasthttp"
)

// Requests that two parsers could read two ways are refused before
// routing, and their connection is closed (RFC 9112 §6.1, §5.2): bytes
// after an ambiguous request must never be read as the next request.
// fasthttp already refuses a repeated Content-Length and a
// Transfer-Encoding other than chunked; it reads a request with both
// Content-Length and chunked Transfer-Encoding by the chunked body and
// keeps the connection, which this refuses.
var (
	errAmbiguousLength = newErr(400, codeParam, "request has both Content-Length and Transfer-Encoding: refused, connection closed")
	errObsFold         = newErr(400, codeParam, "request has a header folded over lines (obs-fold): refused, connection closed")
)

// ambiguous returns why h is refused, or nil. It reads the raw header
// block once: fasthttp keeps no trace of a Transfer-Encoding once it has
// read the chunked body.
func ambiguous(h *fasthttp.RequestHeader) *apiError {
	raw := h.RawHeaders()
	var te, cl bool
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		if len(line) == 0 {
			continue
		}
		switch line[0] {
		case ' ', '\t':
			return errObsFold
		case 't', 'T':
			te = te || isHeader(line, "transfer-encoding")
		case 'c', 'C':
			cl = cl || isHeader(line, "content-length")
		}
	}
	if te && cl {
		return errAmbiguousLength
	}
	return nil
}

// isHeader reports whether line is a header named name (lower case), in
// any case.
func isHeader(line []byte, name string) bool {
	return len(line) > len(name) && line[len(name)] == ':' && bytes.EqualFold(line[:len(name)], []byte(name))
}

// refuse answers an ambiguous request and closes its connection.
func refuse(ctx *fasthttp.RequestCtx, e *apiError) {
	var buf [200]byte
	ctx.SetConnectionClose()
	writeError(ctx, buf[:0], e)
}

// errPostQuery refuses a query string on a POST, whose parameters are in
// its JSON body (docs/API.md, "Strict parameters").
func errPostQuery(ctx *fasthttp.RequestCtx) *apiError {
	var name []byte
	ctx.QueryArgs().VisitAll(func(k, _ []byte) {
		if name == nil {
			name = k
		}
	})
	return newErr(400, codeParam, fmt.Sprintf("unknown parameter %q: a POST takes its parameters in the JSON body", name))
}
