package kvmock

import (
	"encoding/json"
	"errors"
	"net/http"
)

// errorBody is vLLM's (and OpenAI's) error response:
// {"error": {"message", "type", "param", "code"}}.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody{Error: errorDetail{Message: msg, Type: errorType(status), Code: status}})
}

// errorType names a status as vLLM does (the Python exception's name).
func errorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "BadRequestError"
	case http.StatusNotFound:
		return "NotFoundError"
	case http.StatusMethodNotAllowed:
		return "MethodNotAllowed"
	case http.StatusRequestEntityTooLarge:
		return "RequestEntityTooLarge"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailableError"
	}
	return "InternalServerError"
}

// statusOf maps an error from decoding or the engine to its HTTP status.
func statusOf(err error) int {
	var br *badRequest
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge
	case errors.As(err, &br),
		errors.Is(err, ErrEmptyPrompt), errors.Is(err, ErrTooLong),
		errors.Is(err, ErrTooManyBlocks), errors.Is(err, ErrTokenOutOfVocab),
		errors.Is(err, errBadMaxTokens):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}
