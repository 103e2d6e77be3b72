package summary

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
)

func TestATrendIsOldestFirstWithItsBaselineAndVerdictsMarked(t *testing.T) {
	base, slow := uuid.MustParse("01970000-0000-7000-8000-0000000000a1"), uuid.MustParse("01970000-0000-7000-8000-0000000000b7")
	at := time.Date(2026, 11, 28, 9, 41, 0, 0, time.UTC)
	rows := []barrage.TrendRun{ // newest first, as the store reads them
		{ID: slow, State: barrage.RunFinished, CreatedAt: at.Add(time.Minute), Revision: 3, Figures: []byte(`{
			"total": {"name": "all requests", "count": 771, "rps": 128.6, "p50_ms": 30.7, "p95_ms": 32.0, "p99_ms": 33.9, "error_rate": 0},
			"requests": [{"name": "get cart", "count": 771, "rps": 128.6, "p50_ms": 30.7, "p95_ms": 32.0, "p99_ms": 33.9, "error_rate": 0}],
			"thresholds": [{"check": "p99 < 5s", "observed": 0.034, "passed": true}, {"check": "p95 < 25ms", "observed": 0.032, "passed": false}],
			"baseline": "` + base.String() + `", "verdict": "regressed"}`)},
		{ID: base, State: barrage.RunFinished, CreatedAt: at, Revision: 3, Figures: []byte(`{
			"total": {"name": "all requests", "count": 1141, "rps": 190.2, "p50_ms": 20.6, "p95_ms": 21.9, "p99_ms": 23.0, "error_rate": 0},
			"requests": null, "thresholds": [], "baseline": null, "verdict": null}`)},
	}
	tr, err := NewTrend(uuid.New(), &base, rows)
	require.NoError(t, err)
	require.Len(t, tr.Runs, 2)
	first, second := tr.Runs[0], tr.Runs[1]
	require.Equal(t, base, first.RunID)
	require.True(t, first.Baseline)
	require.Nil(t, first.ComparedWith)
	require.Empty(t, first.Verdict)
	require.Equal(t, []TrendFigures{}, first.Requests, "a list, never null")
	require.False(t, second.Baseline)
	require.Equal(t, &base, second.ComparedWith)
	require.Equal(t, Regressed, second.Verdict)
	require.Equal(t, 1, second.ThresholdsFailed)
	require.Equal(t, "get cart", second.Requests[0].Name)

	var b bytes.Buffer
	tr.Print(&b)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 3)
	require.Regexp(t, `^RUN\s+STARTED\s+REV\s+STATE\s+REQ/S\s+P50\s+P95\s+P99\s+ERRORS\s+THRESHOLDS\s+VS BASELINE$`, lines[0])
	require.Regexp(t, `^`+base.String()+`\s+2026-11-28 09:41\s+3\s+finished\s+190\.2\s+20\.60ms\s+21\.90ms\s+23\.00ms\s+0\.00%\s+passed\s+BASELINE$`, lines[1])
	require.Regexp(t, `^`+slow.String()+`\s.*\s1 failed\s+regressed$`, lines[2])

	_, err = NewTrend(uuid.New(), nil, []barrage.TrendRun{{ID: slow, Figures: []byte(`{"total": 3}`)}})
	require.ErrorContains(t, err, slow.String())
}
