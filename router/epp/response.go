package epp

import (
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// upstreamAddress is the attribute (response_attributes) naming the
// endpoint that served, for gateways that report no metadata.
const upstreamAddress = "upstream.address"

// responseTrack is the response path's state: prefill marked, load freed,
// the served endpoint.
type responseTrack struct {
	prefilled, released bool
	served              string
}

func (x *exchange) onResponseHeaders(req *extprocv3.ProcessingRequest, h *extprocv3.HttpHeaders) error {
	x.noteServed(req)
	if err := x.send(pickedResponseHeaders(x.p, x.picked)); err != nil {
		return err
	}
	if h.GetEndOfStream() {
		x.release()
	}
	return nil
}

func (x *exchange) onResponseBody(b *extprocv3.HttpBody) error {
	if !x.resp.prefilled && len(b.GetBody()) > 0 {
		// The first bytes of the answer: the engine is past prefill.
		x.resp.prefilled = true
		if x.picked && x.p.RequestID != "" {
			x.s.opts.Router.PrefillDoneNoWait(x.p.RequestID)
			x.s.kick(x.p.Model)
		}
	}
	var err error
	if x.respMode == filterv3.ProcessingMode_FULL_DUPLEX_STREAMED {
		err = x.sendBody(false, b.GetBody(), b.GetEndOfStream())
	} else {
		err = x.send(continueBody(false))
	}
	if b.GetEndOfStream() {
		x.release()
	}
	return err
}

func (x *exchange) onResponseTrailers() error {
	err := x.send(continueTrailers(false))
	x.release()
	return err
}

// noteServed reads back the endpoint that served (the override_host
// policy's metadata, or the upstream.address attribute) and counts a
// request that did not land on the pick.
func (x *exchange) noteServed(req *extprocv3.ProcessingRequest) {
	served := servedEndpoint(req.GetMetadataContext(), req.GetAttributes())
	if served == "" || !x.picked {
		return
	}
	x.resp.served = served
	if served != x.p.Endpoint {
		x.s.m.servedElsewhere.Inc()
		x.s.log.Debug("kvrouter epp: served by another endpoint than the pick", "picked", x.p.Endpoint, "served", served)
	}
}

func servedEndpoint(md *corev3.Metadata, attrs map[string]*structpb.Struct) string {
	if ns, ok := md.GetFilterMetadata()[MetadataNamespace]; ok {
		if v := ns.GetFields()[ServedKey].GetStringValue(); v != "" {
			return strings.TrimSpace(v)
		}
	}
	for _, st := range attrs {
		if v := st.GetFields()[upstreamAddress].GetStringValue(); v != "" {
			return v
		}
	}
	return ""
}
