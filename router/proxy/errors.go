package proxy

import (
	"net/http"

	"github.com/kvhash/kvhash/router/internal/httpapi"
)

// apiError is an error answered as OpenAI's error object, the shape every
// OpenAI client parses: {"error":{"message","type","code"}} (httpapi owns
// the shape, shared with router/serve).
type apiError = httpapi.Error

// badRequest and unavailable are httpapi's, shared with the other
// package (router/serve, router/proxy).
var (
	badRequest  = httpapi.BadRequest
	unavailable = httpapi.Unavailable
)

// upstreamError: the engine could not be reached or broke off (502).
func upstreamError(code, format string, args ...any) *apiError {
	return httpapi.NewError(http.StatusBadGateway, "upstream_error", code, format, args...)
}

// upstreamTimeout: the engine did not answer in time (504).
func upstreamTimeout(format string, args ...any) *apiError {
	return httpapi.NewError(http.StatusGatewayTimeout, "upstream_error", "engine_timeout", format, args...)
}

// writeError answers err as OpenAI's error object; an error that is not
// an apiError is a 500.
func writeError(w http.ResponseWriter, err error) { httpapi.WriteError(w, err) }

func writeJSON(w http.ResponseWriter, status int, v any) { httpapi.WriteJSON(w, status, v) }
