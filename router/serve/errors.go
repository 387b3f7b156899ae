package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// apiError is an error with its HTTP status, written as OpenAI's error
// object: {"error":{"message","type","code"}}. type is the error class
// ("invalid_request_error", "not_found_error", ...); code is a stable
// machine-readable name of the case ("unknown_field", "body_too_large").
type apiError struct {
	Status  int
	Type    string
	Code    string
	Message string
}

func (e *apiError) Error() string { return e.Message }

func badRequest(code, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: code, Message: fmt.Sprintf(format, args...)}
}

func notFound(code, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusNotFound, Type: "not_found_error", Code: code, Message: fmt.Sprintf(format, args...)}
}

func tooLarge(code, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: code, Message: fmt.Sprintf(format, args...)}
}

func conflict(code, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusConflict, Type: "conflict_error", Code: code, Message: fmt.Sprintf(format, args...)}
}

func unavailable(code, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Type: "unavailable_error", Code: code, Message: fmt.Sprintf(format, args...)}
}

func internalError(err error) *apiError {
	return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: "internal", Message: err.Error()}
}

type errorBody struct {
	Error errorObject `json:"error"`
}

type errorObject struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    string `json:"code"`
}

// writeError answers err as JSON; an error that is not an apiError is a
// 500 (its text is still given: it is ours, never a secret).
func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = internalError(err)
	}
	writeJSON(w, ae.Status, errorBody{Error: errorObject{Message: ae.Message, Type: ae.Type, Code: ae.Code}})
}

// writeJSON answers v with status. An encoding failure after the header
// cannot change the status; it can only be dropped.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
