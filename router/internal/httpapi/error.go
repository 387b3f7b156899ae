package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// Error is an error with its HTTP status, written as OpenAI's error
// object. Type is the error class ("invalid_request_error",
// "not_found_error", ...); Code is a stable machine-readable name of the
// case ("unknown_field", "body_too_large").
type Error struct {
	Status  int
	Type    string
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// NewError builds an Error whose message is format applied to args.
func NewError(status int, typ, code, format string, args ...any) *Error {
	return &Error{Status: status, Type: typ, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Internal is err as a 500. Its text is still given: it is kvrouter's own,
// never a secret.
func Internal(err error) *Error {
	return &Error{Status: http.StatusInternalServerError, Type: "server_error", Code: "internal", Message: err.Error()}
}

type errorBody struct {
	Error errorObject `json:"error"`
}

type errorObject struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    string `json:"code"`
}

// WriteError answers err as OpenAI's error object; an error that does not
// wrap an *Error is answered as Internal(err).
func WriteError(w http.ResponseWriter, err error) {
	var ae *Error
	if !errors.As(err, &ae) {
		ae = Internal(err)
	}
	WriteJSON(w, ae.Status, errorBody{Error: errorObject{Message: ae.Message, Type: ae.Type, Code: ae.Code}})
}

// WriteJSON answers v with status. An encoding failure after the header
// cannot change the status; it can only be dropped.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
