package agents_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/e2etest"
)

// Two serve replicas on one PostgreSQL (the CLI signed in to one, the API read from the other): a
// schedule every 8 seconds fires on whichever replica's
// jobs get there first, each firing once, each with its run; a schedule that cannot start its
// run records why, tells the project's channel, and is not retried; a paused schedule fires no
// more.
func TestSchedulesFireOnceAcrossReplicas(t *testing.T) {
	pg := e2etest.StartPostgres(t)

	env := append([]string{"DATABASE_URL=" + pg.DSN(), "BARRAGE_SCHEDULE_MIN_INTERVAL=1s"}, notifyEnv...)
	dataA := e2etest.ReachableDir(t)
	a := e2etest.StartServe(t, dataA, nil, env...)
	// The second replica signs and seals with the first's keys, as every replica must.
	b := e2etest.StartServe(t, e2etest.ReachableDir(t), nil, append(env,
		"BARRAGE_JWT_KEY_FILE="+filepath.Join(dataA, "jwt-ed25519.pem"), "BARRAGE_SECRET_KEYS_FILE="+filepath.Join(dataA, "secret-keys"))...)
	cfg := t.TempDir()
	e2etest.SignUpFirstAdmin(t, a, cfg, "ada@example.com", "Ada")
	token := strings.TrimSpace(e2etest.MustCLI(t, a, cfg, "", "tokens", "create", "--name", "e2e", "--scopes", "read,write"))
	e2etest.StartAgent(t, a, strings.TrimSpace(e2etest.MustCLI(t, a, cfg, "", "agents", "create", "one")))
	e2etest.Eventually(t, 30*time.Second, "the agent online", func() bool {
		return strings.Contains(e2etest.MustCLI(t, a, cfg, "", "agents", "list"), " online ")
	})
	target := e2etest.NewCountingTarget(t)
	test := strings.TrimSpace(e2etest.MustCLI(t, a, cfg, "", "tests", "push",
		e2etest.OneRequestScript(t, "nightly", target.Srv.URL, "{ vus: 1, duration: 1s }")))
	hook := newReceiver(t, http.StatusOK)
	created := strings.Fields(e2etest.MustCLI(t, a, cfg, "", "notifications", "create", "ops", "--webhook", hook.URL, "--event", "schedule.failed"))
	hook.setSecret(created[1])

	sched := strings.TrimSpace(e2etest.MustCLI(t, a, cfg, "", "schedules", "create", test, "--every", "8s", "--name", "often", "--revision", "1"))
	type firing struct {
		DueAt time.Time `json:"due_at"`
		RunID *string   `json:"run_id"`
		Error string    `json:"error"`
	}
	firings := func(id string) []firing {
		var list struct {
			Items []firing `json:"items"`
		}
		require.Equal(t, http.StatusOK, e2etest.APIGet(t, b, token, "/v1/schedules/"+id+"/firings", &list))
		return list.Items
	}
	e2etest.Eventually(t, 2*time.Minute, "two firings, each with its run", func() bool {
		fs := firings(sched)
		return len(fs) >= 2 && fs[0].RunID != nil && fs[1].RunID != nil
	})
	e2etest.MustCLI(t, a, cfg, "", "schedules", "pause", sched)
	fs := firings(sched)
	require.Empty(t, fs[len(fs)-1].Error)
	require.Equal(t, 8*time.Second, fs[len(fs)-2].DueAt.Sub(fs[len(fs)-1].DueAt), "a firing every 8 s, each once")
	// Every run of the test is a firing's, and every firing's run is one of them: none twice.
	var runs struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	e2etest.Eventually(t, time.Minute, "the runs of the firings so far", func() bool {
		fs = firings(sched)
		require.Equal(t, http.StatusOK, e2etest.APIGet(t, a, token, "/v1/runs?test_id="+test, &runs))
		for _, f := range fs {
			if f.RunID == nil {
				return false
			}
		}
		return len(runs.Items) == len(fs)
	})
	ofFirings := map[string]bool{}
	for _, f := range fs {
		ofFirings[*f.RunID] = true
	}
	for _, r := range runs.Items {
		require.True(t, ofFirings[r.ID], "run %s is no firing's", r.ID)
	}
	onA, onB := strings.Count(a.Stderr.String(), `msg="schedule fired"`), strings.Count(b.Stderr.String(), `msg="schedule fired"`)
	t.Logf("%d firings: %d started on the first replica, %d on the second", len(fs), onA, onB)
	require.Equal(t, len(fs), onA+onB, "each firing started its run once, on one replica")
	shown := e2etest.MustCLI(t, a, cfg, "", "schedules", "show", sched)
	require.Contains(t, shown, "state:  PAUSED: paused by Ada")
	require.Contains(t, shown, "(revision: 1)")
	require.Contains(t, shown, "next:   \n", "a paused schedule has no next firing")

	// A schedule whose runs cannot be admitted records why, tells the channel, and tries no more.
	bad := strings.TrimSpace(e2etest.MustCLI(t, a, cfg, "", "schedules", "create", test, "--every", "2s", "--agent", "0197a000-0000-7000-8000-000000000000"))
	told := hook.next(t, time.Minute)
	require.Equal(t, "schedule.failed", told.header.Get("Barrage-Event"))
	var ev struct {
		Schedule struct {
			ID    string `json:"id"`
			Error string `json:"error"`
		} `json:"schedule"`
	}
	require.NoError(t, json.Unmarshal(told.body, &ev))
	require.Equal(t, bad, ev.Schedule.ID)
	require.Contains(t, ev.Schedule.Error, "agent not found")
	first := firings(bad)[len(firings(bad))-1]
	require.Nil(t, first.RunID)
	require.Contains(t, first.Error, "agent not found")
	e2etest.MustCLI(t, a, cfg, "", "schedules", "delete", bad)

	// Bad input is refused on its field.
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--every", "200ms"}, "every"},
		{[]string{"--cron", "61 * * * *"}, "cron"},
		{[]string{"--cron", "0 2 * * *", "--tz", "Mars/Olympus"}, "time_zone"},
		{[]string{"--every", "1h", "--revision", "2"}, "the test has revisions 1 to 1"},
	} {
		_, errOut, err := e2etest.CLI(t, a, cfg, "", append([]string{"schedules", "create", test}, c.args...)...)
		require.Error(t, err, "%v", c.args)
		require.Contains(t, errOut, c.says, "%v", c.args)
	}
}
