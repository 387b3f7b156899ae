// Package epp is kvrouter as a Gateway API Inference Extension endpoint
// picker: Envoy's ext_proc service (envoy.service.ext_proc.v3), asked by
// an inference gateway (Istio, kgateway, GKE Gateway, Envoy Gateway,
// agentgateway) where each request goes.
//
// Per HTTP request the gateway opens one gRPC stream. The picker reads
// the OpenAI body (model, prompt token ids or text, chat messages; text
// tokenized by an engine's /tokenize, as the proxy does), routes it with
// the production router (route.Router, the KV overlap and active load),
// and answers the header x-gateway-destination-endpoint (and the same
// value in the envoy.lb dynamic metadata). The body is handed back as the
// body mode requires: FULL_DUPLEX_STREAMED holds the headers' answer until
// the body's end and streams the body back; BUFFERED answers the headers
// at once and the mutation rides on the body's answer. On the response
// path the first body chunk marks prefill done and the end of the stream
// (or its reset) frees the request's load.
//
// Endpoints are the registered workers' base_url host:port: a model server
// that is not registered is never picked. docs/guides/gateway.md has the
// Envoy configuration, the InferencePool and the failure modes.
//
// Files: epp.go (options, server, health), stream.go (one gRPC stream's
// messages), body.go (body modes and chunking), pick.go (prompt to
// endpoint), endpoints.go (workers' addresses), response.go (the response
// path), answers.go (the protocol's messages), metrics.go, tls.go.
package epp
