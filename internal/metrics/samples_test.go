package metrics_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/metrics"
)

func TestErrorSamplesKeepTheFirstDistinctReasons(t *testing.T) {
	t.Parallel()
	var s metrics.ErrorSamples
	// The local end of each connection differs: the same reason all the same.
	for port := range 3 {
		s.Add("home", "connect", fmt.Sprintf("read tcp 127.0.0.1:%d->127.0.0.1:80: read: connection reset by peer", 40000+port), 1)
	}
	for i := range metrics.MaxSamplesPerClass + 3 {
		s.Add("home", "assertion", fmt.Sprintf("body does not contain %q", fmt.Sprint(i)), 1)
	}
	s.Add("cart", "5xx", "status 503", 4)
	var more metrics.ErrorSamples
	more.Merge([]metrics.ErrorSample{{Label: "cart", Class: "5xx", Message: "status 503", Count: 6}})
	more.Merge(s.List())
	got := more.List()
	require.Equal(t, metrics.ErrorSample{Label: "cart", Class: "5xx", Message: "status 503", Count: 10}, got[0])
	require.Equal(t, metrics.ErrorSample{Label: "home", Class: "assertion", Message: metrics.OtherErrors, Count: 3}, got[1], "past the bound, counted together")
	require.Len(t, got, 1+1+metrics.MaxSamplesPerClass+1)
	require.Equal(t, metrics.ErrorSample{Label: "home", Class: "connect", Message: "read tcp 127.0.0.1:80: read: connection reset by peer", Count: 3}, got[len(got)-1])
}
