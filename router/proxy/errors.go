package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// apiError is an error answered as OpenAI's error object, the shape every
// OpenAI client parses: {"error":{"message","type","code"}}.
type apiError struct {
	Status  int
	Type    string
	Code    string
	Message string
}

func (e *apiError) Error() string { return e.Message }

func newError(status int, typ, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Type: typ, Code: code, Message: fmt.Sprintf(format, args...)}
}

func badRequest(code, format string, args ...any) *apiError {
	return newError(http.StatusBadRequest, "invalid_request_error", code, format, args...)
}

// upstreamError: the engine could not be reached or broke off (502).
func upstreamError(code, format string, args ...any) *apiError {
	return newError(http.StatusBadGateway, "upstream_error", code, format, args...)
}

// upstreamTimeout: the engine did not answer in time (504).
func upstreamTimeout(format string, args ...any) *apiError {
	return newError(http.StatusGatewayTimeout, "upstream_error", "engine_timeout", format, args...)
}

func unavailable(code, format string, args ...any) *apiError {
	return newError(http.StatusServiceUnavailable, "unavailable_error", code, format, args...)
}

type errorBody struct {
	Error errorObject `json:"error"`
}

type errorObject struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    string `json:"code"`
}

// writeError answers err as OpenAI's error object; an error that is not
// an apiError is a 500.
func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = newError(http.StatusInternalServerError, "server_error", "internal", "%v", err)
	}
	writeJSON(w, ae.Status, errorBody{Error: errorObject{Message: ae.Message, Type: ae.Type, Code: ae.Code}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
