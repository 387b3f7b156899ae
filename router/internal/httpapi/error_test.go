package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteError(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantCode int
		wantBody string
	}{
		{
			name:     "api error",
			err:      NewError(http.StatusBadRequest, "invalid_request_error", "unknown_field", "unknown field %q", "x"),
			wantCode: http.StatusBadRequest,
			wantBody: `{"error":{"message":"unknown field \"x\"","type":"invalid_request_error","code":"unknown_field"}}`,
		},
		{
			name:     "wrapped api error keeps its status",
			err:      fmt.Errorf("route: %w", NewError(http.StatusNotFound, "not_found_error", "unknown_model", "no model m")),
			wantCode: http.StatusNotFound,
			wantBody: `{"error":{"message":"no model m","type":"not_found_error","code":"unknown_model"}}`,
		},
		{
			name:     "plain error is a 500 with its text",
			err:      errors.New("disk gone"),
			wantCode: http.StatusInternalServerError,
			wantBody: `{"error":{"message":"disk gone","type":"server_error","code":"internal"}}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			WriteError(rec, tc.err)
			assert.Equal(t, tc.wantCode, rec.Code)
			assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
			assert.JSONEq(t, tc.wantBody, rec.Body.String())
		})
	}
}

func TestWriteJSON(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteJSON(rec, http.StatusCreated, map[string]string{"status": "ok"})
	require.Equal(t, http.StatusCreated, rec.Code)
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	assert.JSONEq(t, `{"status":"ok"}`, rec.Body.String())
}

func TestErrorMessageIsItsText(t *testing.T) {
	err := NewError(http.StatusConflict, "conflict_error", "exists", "worker %d exists", 3)
	assert.Equal(t, "worker 3 exists", err.Error())
	assert.Equal(t, http.StatusConflict, err.Status)
}
