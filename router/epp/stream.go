package epp

import (
	"context"
	"errors"
	"io"
	"net/http"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvhash/kvhash/router/internal/httpapi"
)

// exchange is one HTTP request's ext_proc stream: its messages in order,
// the body held until the pick, the pick's load until the end.
type exchange struct {
	s      *Server
	stream extprocv3.ExternalProcessor_ProcessServer
	ctx    context.Context

	// The body modes, from the gateway's protocol_config; without one,
	// the reference mode (FULL_DUPLEX_STREAMED both ways).
	reqMode, respMode filterv3.ProcessingMode_BodySendMode

	path string
	sub  subset
	body []byte

	answered bool // the request is routed or refused: later request messages pass
	refused  bool // an immediate response was sent
	p        pick
	picked   bool
	resp     responseTrack
}

func newExchange(s *Server, stream extprocv3.ExternalProcessor_ProcessServer) *exchange {
	return &exchange{
		s: s, stream: stream, ctx: stream.Context(),
		reqMode:  filterv3.ProcessingMode_FULL_DUPLEX_STREAMED,
		respMode: filterv3.ProcessingMode_FULL_DUPLEX_STREAMED,
	}
}

// run answers the gateway's messages until it closes the stream.
func (x *exchange) run() error {
	for {
		req, err := x.stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) || status.Code(err) == codes.Canceled {
				return nil // the request ended, or was reset
			}
			return err
		}
		if pc := req.GetProtocolConfig(); pc != nil {
			x.reqMode, x.respMode = pc.GetRequestBodyMode(), pc.GetResponseBodyMode()
		}
		if req.GetObservabilityMode() {
			continue // answers would be ignored: nothing to route
		}
		if err := x.handle(req); err != nil {
			return err
		}
	}
}

func (x *exchange) handle(req *extprocv3.ProcessingRequest) error {
	switch v := req.GetRequest().(type) {
	case *extprocv3.ProcessingRequest_RequestHeaders:
		return x.onRequestHeaders(req, v.RequestHeaders)
	case *extprocv3.ProcessingRequest_RequestBody:
		return x.onRequestBody(v.RequestBody)
	case *extprocv3.ProcessingRequest_RequestTrailers:
		return x.onRequestTrailers()
	case *extprocv3.ProcessingRequest_ResponseHeaders:
		return x.onResponseHeaders(req, v.ResponseHeaders)
	case *extprocv3.ProcessingRequest_ResponseBody:
		return x.onResponseBody(v.ResponseBody)
	case *extprocv3.ProcessingRequest_ResponseTrailers:
		return x.onResponseTrailers()
	}
	return status.Errorf(codes.InvalidArgument, "epp: a processing request with no known message")
}

func (x *exchange) send(r *extprocv3.ProcessingResponse) error { return x.stream.Send(r) }

func (x *exchange) onRequestHeaders(req *extprocv3.ProcessingRequest, h *extprocv3.HttpHeaders) error {
	x.path = headerValue(h.GetHeaders(), ":path")
	x.sub = readSubset(req.GetMetadataContext())
	if h.GetEndOfStream() || x.reqMode == filterv3.ProcessingMode_NONE {
		// No body will come: route now, on the path alone.
		return x.route(func(p pick) error { return x.send(routedHeaders(p)) })
	}
	switch x.reqMode {
	case filterv3.ProcessingMode_FULL_DUPLEX_STREAMED:
		return nil // the answer waits for the body's end
	case filterv3.ProcessingMode_BUFFERED, filterv3.ProcessingMode_BUFFERED_PARTIAL:
		return x.send(continueRequestHeaders())
	}
	// STREAMED hands the headers upstream before the body is read.
	return x.refuse(httpapi.NewError(http.StatusInternalServerError, "server_error", "unsupported_body_mode",
		"the endpoint picker routes on the body: set request_body_mode FULL_DUPLEX_STREAMED or BUFFERED, not %s", x.reqMode))
}

func (x *exchange) onRequestBody(b *extprocv3.HttpBody) error {
	if x.answered {
		if x.refused {
			return nil
		}
		// Past the pick (BUFFERED_PARTIAL's rest): pass the body on.
		if x.reqMode == filterv3.ProcessingMode_FULL_DUPLEX_STREAMED {
			return x.sendBody(true, b.GetBody(), b.GetEndOfStream())
		}
		return x.send(continueBody(true))
	}
	if int64(len(x.body)+len(b.GetBody())) > x.s.opts.MaxBodyBytes {
		return x.refuse(httpapi.NewError(http.StatusRequestEntityTooLarge, "invalid_request_error", "body_too_large",
			"request body exceeds %d bytes", x.s.opts.MaxBodyBytes))
	}
	x.body = append(x.body, b.GetBody()...)
	if x.reqMode != filterv3.ProcessingMode_FULL_DUPLEX_STREAMED {
		// BUFFERED: the whole body in one message; the pick rides on its answer.
		return x.route(func(p pick) error { return x.send(routedBody(p)) })
	}
	if b.GetEndOfStream() {
		return x.finishDuplex(true)
	}
	return nil
}

// finishDuplex answers the held request headers with the pick and hands
// the body back (FULL_DUPLEX_STREAMED); eos says whether the body ends
// the request (false: trailers follow).
func (x *exchange) finishDuplex(eos bool) error {
	return x.route(func(p pick) error {
		if err := x.send(routedHeaders(p)); err != nil {
			return err
		}
		body := x.body
		x.body = nil
		return x.sendBody(true, body, eos)
	})
}

// sendBody streams body back in chunks, the last carrying eos.
func (x *exchange) sendBody(request bool, body []byte, eos bool) error {
	parts := chunks(body)
	for i, c := range parts {
		if err := x.send(streamedBody(request, c, eos && i == len(parts)-1)); err != nil {
			return err
		}
	}
	return nil
}

func (x *exchange) onRequestTrailers() error {
	if !x.answered && x.reqMode == filterv3.ProcessingMode_FULL_DUPLEX_STREAMED {
		if err := x.finishDuplex(false); err != nil {
			return err
		}
	}
	if x.refused {
		return nil
	}
	return x.send(continueTrailers(true))
}

// route picks for the held body and sends the answer with answer, or
// refuses the request.
func (x *exchange) route(answer func(pick) error) error {
	x.answered = true
	t0 := x.s.opts.Now()
	p, err := x.s.decide(x.ctx, x.path, x.body, x.sub)
	x.s.m.pickSeconds.Observe(x.s.opts.Now().Sub(t0).Seconds())
	if err != nil {
		return x.refuse(err)
	}
	x.p, x.picked = p, true
	x.s.m.picks.Inc()
	return answer(p)
}

// refuse answers the client directly (no upstream): 503 no endpoint,
// 429 saturated, 4xx a bad request.
func (x *exchange) refuse(err error) error {
	x.answered, x.refused, x.body = true, true, nil
	r, code := immediate(err)
	x.s.m.immediate(code)
	x.s.log.Debug("kvrouter epp: immediate response", "status", code, "path", x.path, "error", err.Error())
	return x.send(r)
}

// release frees the pick's load once: at the end of the response, or when
// the stream ends early (the request was reset).
func (x *exchange) release() {
	if !x.picked || x.resp.released {
		return
	}
	x.resp.released = true
	if x.p.RequestID != "" {
		// The in-flight count first: once the router shows the request
		// gone, the saturation check sees it gone too.
		x.s.flights.add(x.p.Worker, -1)
		x.s.opts.Router.FreeNoWait(x.p.RequestID)
		if x.s.opts.Slots != nil {
			x.s.opts.Slots.GiveSlot(x.p.Worker, x.p.Model)
		}
		x.s.kick(x.p.Model)
	}
}

// headerValue reads one header of a gateway's header map (Envoy sends
// values in raw_value).
func headerValue(hm *corev3.HeaderMap, key string) string {
	for _, h := range hm.GetHeaders() {
		if h.GetKey() == key {
			if rv := h.GetRawValue(); len(rv) > 0 {
				return string(rv)
			}
			return h.GetValue()
		}
	}
	return ""
}
