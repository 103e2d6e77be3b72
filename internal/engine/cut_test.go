package engine

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A request that starts after the end of the run cut the VU's connections fails at once, on a
// kept-alive connection too: moving the connection's deadline for it does not undo the cut.
func TestCutConnectionsStayCut(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			<-r.Context().Done()
		}
	}))
	defer srv.Close()
	tr := newTransport(nil, nil, 1<<20, false, false, nil)
	defer tr.close()
	send := func(path string, timeout time.Duration) *reply {
		u, err := url.Parse(srv.URL + path)
		require.NoError(t, err)
		var r reply
		tr.do(context.Background(), &exchange{method: http.MethodGet, url: u, rawURL: u.String(), timeout: timeout}, nil, &r)
		return &r
	}
	require.NoError(t, send("/", 100*time.Millisecond).err) // leaves a kept-alive connection
	tr.cutAll()
	// A longer timeout than the first request's: the connection's deadline has to move.
	require.ErrorIs(t, send("/hang", 2*time.Second).err, context.Canceled)
}
