package epp

import (
	"encoding/json"
	"errors"
	"strconv"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/kvhash/kvhash/router/internal/httpapi"
)

// The answer's names (the endpoint picker protocol).
const (
	// DestinationHeader carries the pick (ip:port, or ip:port,ip:port
	// with fallbacks); it overwrites a value the client sent.
	DestinationHeader = "x-gateway-destination-endpoint"
	// MetadataNamespace is the dynamic metadata namespace of the pick and
	// of the served endpoint reported back.
	MetadataNamespace = "envoy.lb"
	// ServedKey is where a gateway reports the endpoint that served.
	ServedKey = "x-gateway-destination-endpoint-served"
)

// maxChunk bounds a streamed body chunk sent back to the gateway.
const maxChunk = 64 << 10

// routeMutation is the pick as a header mutation, route cache cleared so
// the gateway's cluster sees the new header.
func routeMutation(p pick) *extprocv3.CommonResponse {
	return &extprocv3.CommonResponse{
		HeaderMutation: &extprocv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{{
			Header:       &corev3.HeaderValue{Key: DestinationHeader, RawValue: []byte(p.Answer)},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		}}},
		ClearRouteCache: true,
	}
}

// pickMetadata is the pick as envoy.lb dynamic metadata.
func pickMetadata(p pick) *structpb.Struct {
	return &structpb.Struct{Fields: map[string]*structpb.Value{
		MetadataNamespace: structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
			DestinationHeader: structpb.NewStringValue(p.Answer),
		}}),
	}}
}

// routedHeaders answers the request headers with the pick
// (FULL_DUPLEX_STREAMED, or a request without a body).
func routedHeaders(p pick) *extprocv3.ProcessingResponse {
	return &extprocv3.ProcessingResponse{
		Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{
			Response: routeMutation(p),
		}},
		DynamicMetadata: pickMetadata(p),
	}
}

// routedBody answers a BUFFERED request body with the pick.
func routedBody(p pick) *extprocv3.ProcessingResponse {
	return &extprocv3.ProcessingResponse{
		Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{
			Response: routeMutation(p),
		}},
		DynamicMetadata: pickMetadata(p),
	}
}

func continueRequestHeaders() *extprocv3.ProcessingResponse {
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{}}}
}

// Response headers the picker adds, as the proxy does: which worker it
// picked, at which endpoint.
const (
	HeaderWorker   = "x-kvrouter-worker"
	HeaderEndpoint = "x-kvrouter-endpoint"
	HeaderOverlap  = "x-kvrouter-overlap-blocks"
)

// pickedResponseHeaders passes the response headers on with the pick
// added (nothing added for a request that was not picked).
func pickedResponseHeaders(p pick, picked bool) *extprocv3.ProcessingResponse {
	hr := &extprocv3.HeadersResponse{}
	if picked {
		set := func(k, v string) *corev3.HeaderValueOption {
			return &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: k, RawValue: []byte(v)},
				AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD}
		}
		hr.Response = &extprocv3.CommonResponse{HeaderMutation: &extprocv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{
			set(HeaderWorker, strconv.FormatUint(p.Worker, 10)), set(HeaderEndpoint, p.Endpoint),
			set(HeaderOverlap, strconv.FormatUint(uint64(p.Overlap), 10)),
		}}}
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: hr}}
}

func continueBody(request bool) *extprocv3.ProcessingResponse {
	if request {
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{}}}
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: &extprocv3.BodyResponse{}}}
}

func continueTrailers(request bool) *extprocv3.ProcessingResponse {
	if request {
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestTrailers{RequestTrailers: &extprocv3.TrailersResponse{}}}
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseTrailers{ResponseTrailers: &extprocv3.TrailersResponse{}}}
}

// streamedBody is one chunk of a body handed back in FULL_DUPLEX_STREAMED.
func streamedBody(request bool, chunk []byte, eos bool) *extprocv3.ProcessingResponse {
	br := &extprocv3.BodyResponse{Response: &extprocv3.CommonResponse{BodyMutation: &extprocv3.BodyMutation{
		Mutation: &extprocv3.BodyMutation_StreamedResponse{StreamedResponse: &extprocv3.StreamedBodyResponse{Body: chunk, EndOfStream: eos}},
	}}}
	if request {
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: br}}
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: br}}
}

// chunks splits body into pieces of at most maxChunk (one empty piece for
// an empty body: the end of stream still has to be sent).
func chunks(body []byte) [][]byte {
	if len(body) == 0 {
		return [][]byte{nil}
	}
	var out [][]byte
	for len(body) > maxChunk {
		out = append(out, body[:maxChunk])
		body = body[maxChunk:]
	}
	return append(out, body)
}

// immediate answers the client directly (the gateway sends nothing
// upstream): err's status and OpenAI's error object.
func immediate(err error) (*extprocv3.ProcessingResponse, int) {
	var ae *httpapi.Error
	if !errors.As(err, &ae) {
		ae = httpapi.Internal(err)
	}
	body, _ := json.Marshal(map[string]any{"error": map[string]string{"message": ae.Message, "type": ae.Type, "code": ae.Code}})
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{ImmediateResponse: &extprocv3.ImmediateResponse{
		Status: &typev3.HttpStatus{Code: typev3.StatusCode(ae.Status)},
		Headers: &extprocv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{{
			Header:       &corev3.HeaderValue{Key: "content-type", RawValue: []byte("application/json")},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		}}},
		Body:    body,
		Details: "kvrouter_epp_" + ae.Code,
	}}}, ae.Status
}
