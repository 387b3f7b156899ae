package serve

import (
	"net/http"

	"github.com/kvhash/kvhash/router/internal/httpapi"
)

// apiError is an error with its HTTP status, written as OpenAI's error
// object: {"error":{"message","type","code"}} (httpapi owns the shape,
// shared with router/proxy). type is the error class
// ("invalid_request_error", "not_found_error", ...); code is a stable
// machine-readable name of the case ("unknown_field", "body_too_large").
type apiError = httpapi.Error

// badRequest and unavailable are httpapi's, shared with the other
// package (router/serve, router/proxy).
var (
	badRequest  = httpapi.BadRequest
	unavailable = httpapi.Unavailable
)

func notFound(code, format string, args ...any) *apiError {
	return httpapi.NewError(http.StatusNotFound, "not_found_error", code, format, args...)
}

func tooLarge(code, format string, args ...any) *apiError {
	return httpapi.NewError(http.StatusRequestEntityTooLarge, "invalid_request_error", code, format, args...)
}

func conflict(code, format string, args ...any) *apiError {
	return httpapi.NewError(http.StatusConflict, "conflict_error", code, format, args...)
}

func internalError(err error) *apiError { return httpapi.Internal(err) }

// writeError answers err as JSON; an error that is not an apiError is a
// 500 (its text is still given: it is ours, never a secret).
func writeError(w http.ResponseWriter, err error) { httpapi.WriteError(w, err) }

// writeJSON answers v with status; an encoding failure after the header
// can only be dropped.
func writeJSON(w http.ResponseWriter, status int, v any) { httpapi.WriteJSON(w, status, v) }
