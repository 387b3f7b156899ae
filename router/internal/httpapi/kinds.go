package httpapi

import "net/http"

// The error classes both kvrouter's API and its OpenAI proxy answer
// with, one constructor each, so a class has one status and one type.

// BadRequest is a 400 invalid_request_error.
func BadRequest(code, format string, args ...any) *Error {
	return NewError(http.StatusBadRequest, "invalid_request_error", code, format, args...)
}

// Unavailable is a 503 unavailable_error (no worker can take it now).
func Unavailable(code, format string, args ...any) *Error {
	return NewError(http.StatusServiceUnavailable, "unavailable_error", code, format, args...)
}

// MethodNotAllowed is a 405 naming the methods allowed.
func MethodNotAllowed(format string, args ...any) *Error {
	return NewError(http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", format, args...)
}

// TooManyRequests is a 429: every engine that could serve it is at its
// limit (the caller sets Retry-After).
func TooManyRequests(code, format string, args ...any) *Error {
	return NewError(http.StatusTooManyRequests, "rate_limit_error", code, format, args...)
}
