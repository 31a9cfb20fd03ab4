package load

import (
	"net"

	"github.com/valyala/fasthttp"
)

var bareBody = []byte(`{"orderId":"1"}`)

// BareHandler answers every request 200 with a tiny order-shaped JSON body
// and does nothing else: the cost of HTTP itself, to compare the real
// server against on the same machine with the same generator.
func BareHandler(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("application/json")
	ctx.SetBody(bareBody)
}

// ServeBare serves BareHandler on ln until it is closed.
func ServeBare(ln net.Listener) error {
	s := &fasthttp.Server{Handler: BareHandler, Name: "bare"}
	return s.Serve(ln)
}
