package httpapi

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// A stream that fails after its status was sent (a download cut short) gets no second status
// and no problem appended to what was sent.
func TestAnErrorAfterTheResponseStartedAddsNothing(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest(http.MethodGet, "/v1/agent/artifacts/x", nil)
	w := httptest.NewRecorder()
	rec := &statusRecorder{ResponseWriter: w}
	rec.Header().Set("Content-Type", "application/octet-stream")
	_, err := rec.Write([]byte("the first bytes"))
	require.NoError(t, err)
	writeError(slog.New(slog.DiscardHandler), rec, r, errors.New("write: broken pipe"))
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, "the first bytes", w.Body.String())

	// Before anything was sent, the error is a problem.
	w = httptest.NewRecorder()
	writeError(slog.New(slog.DiscardHandler), &statusRecorder{ResponseWriter: w}, r, errors.New("boom"))
	require.Equal(t, http.StatusInternalServerError, w.Code)
	require.Equal(t, "application/problem+json", w.Header().Get("Content-Type"))
}
