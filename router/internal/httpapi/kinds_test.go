package httpapi

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Each class of error has one status and one type, whichever package
// answers it.
func TestErrorKinds(t *testing.T) {
	tests := []struct {
		err       *Error
		status    int
		typ, code string
	}{
		{BadRequest("bad_x", "x %d", 1), http.StatusBadRequest, "invalid_request_error", "bad_x"},
		{Unavailable("no_worker", "none"), http.StatusServiceUnavailable, "unavailable_error", "no_worker"},
		{MethodNotAllowed("GET on %s", "/p"), http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed"},
		{TooManyRequests("engines_saturated", "full"), http.StatusTooManyRequests, "rate_limit_error", "engines_saturated"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.status, tc.err.Status, tc.code)
		assert.Equal(t, tc.typ, tc.err.Type, tc.code)
		assert.Equal(t, tc.code, tc.err.Code)
		assert.NotEmpty(t, tc.err.Message)
	}
	assert.Equal(t, "x 1", tests[0].err.Message)
}
