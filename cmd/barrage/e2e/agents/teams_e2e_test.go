package agents_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/e2etest"
)

// A team works in a project, with real processes: the owner makes it and invites an editor and
// a viewer, who accept; the editor registers the project's agent, saves a test and runs it there
// against a target on 127.0.0.1; the viewer follows the run live and writes its report, and is
// refused starting, canceling and deleting (403, naming the role); an outsider reaches none of
// it; and the audit log tells each step with its actor.
func TestATeamSharesAProject(t *testing.T) {
	target := e2etest.NewCountingTarget(t)
	p := e2etest.StartServe(t, e2etest.ReachableDir(t), nil)
	admin := t.TempDir()
	e2etest.SignUpFirstAdmin(t, p, admin, "ada@example.com", "Ada")
	person := func(email string) string {
		cfg := t.TempDir()
		pw := email + " password\n"
		e2etest.MustCLI(t, p, cfg, pw, "signup", "--code", e2etest.Invite(t, p, admin), "--email", email, "--name", email)
		e2etest.MustCLI(t, p, cfg, pw, "login", "--email", email)
		return cfg
	}
	owner, editor, viewer, outsider := person("olga@example.com"), person("ed@example.com"), person("vi@example.com"), person("eve@example.com")

	out := e2etest.MustCLI(t, p, owner, "", "projects", "create", "Shop team")
	project := regexp.MustCompile(`id ([0-9a-f-]{36})`).FindStringSubmatch(out)
	require.NotNil(t, project, out)
	e2etest.MustCLI(t, p, owner, "", "projects", "invite", "Shop team", "--email", "ed@example.com", "--role", "editor")
	e2etest.MustCLI(t, p, owner, "", "projects", "invite", "Shop team", "--email", "vi@example.com", "--role", "viewer")
	for _, cfg := range []string{editor, viewer} {
		inv := regexp.MustCompile(`(?m)^([0-9a-f-]{36})\s+Shop team\s`).FindStringSubmatch(e2etest.MustCLI(t, p, cfg, "", "projects", "invitations"))
		require.NotNil(t, inv)
		require.Contains(t, e2etest.MustCLI(t, p, cfg, "", "projects", "accept", inv[1]), "of Shop team")
		e2etest.MustCLI(t, p, cfg, "", "projects", "use", "Shop team")
	}
	members := e2etest.MustCLI(t, p, viewer, "", "projects", "show", "Shop team")
	require.Regexp(t, `ed@example.com\s.*\seditor\s`, members)
	require.Regexp(t, `vi@example.com\s.*\sviewer\s`, members)

	// The editor's agent serves the project; the test and its run are the project's.
	e2etest.StartAgent(t, p, strings.TrimSpace(e2etest.MustCLI(t, p, editor, "", "agents", "create", "team-agent")))
	e2etest.Eventually(t, 30*time.Second, "the team's agent online", func() bool {
		return regexp.MustCompile(`\steam-agent\s.*\sonline\s`).MatchString(e2etest.MustCLI(t, p, viewer, "", "agents", "list"))
	})
	require.NotContains(t, e2etest.MustCLI(t, p, outsider, "", "agents", "list"), "team-agent")
	script := filepath.Join(t.TempDir(), "checkout.yaml")
	require.NoError(t, os.WriteFile(script, []byte(`version: 1
name: checkout
session:
  groups:
    - name: home
      requests:
        - { name: get home, url: "`+target.Srv.URL+`/" }
load:
  vus: 2
  duration: 4s
`), 0o644))
	test := strings.TrimSpace(e2etest.MustCLI(t, p, editor, "", "tests", "push", script))
	out = e2etest.MustCLI(t, p, editor, "", "runs", "start", "--test", test)
	run := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f-]{27}`).FindString(out)
	require.NotEmpty(t, run, out)

	// The viewer follows it live to its end, reads it and writes its report.
	watched := e2etest.MustCLI(t, p, viewer, "", "runs", "watch", run)
	require.Contains(t, watched, "finished")
	require.Positive(t, target.Hits.Load())
	report := filepath.Join(t.TempDir(), "report.html")
	e2etest.MustCLI(t, p, viewer, "", "runs", "report", "-o", report, run)
	fi, err := os.Stat(report)
	require.NoError(t, err)
	require.Positive(t, fi.Size())

	// What a viewer may not do is refused, naming the role; an outsider finds nothing.
	for _, args := range [][]string{
		{"runs", "start", "--test", test},
		{"runs", "cancel", run},
		{"tests", "delete", test},
		{"tests", "push", script},
	} {
		_, errOut, err := e2etest.CLI(t, p, viewer, "", args...)
		require.Error(t, err, "barrage %s as a viewer", strings.Join(args, " "))
		require.Regexp(t, `403 Forbidden: this takes the (runner|editor) role in its project; you are a viewer there`, errOut, strings.Join(args, " "))
	}
	for _, args := range [][]string{{"runs", "show", run}, {"tests", "show", test}} {
		_, errOut, err := e2etest.CLI(t, p, outsider, "", args...)
		require.Error(t, err)
		require.Contains(t, errOut, "404", strings.Join(args, " "))
	}
	_, errOut, err := e2etest.CLI(t, p, outsider, "", "tests", "list", "--project", project[1])
	require.Error(t, err)
	require.Contains(t, errOut, "404")

	// The owner reads the project's part of the audit log: each step, by whom.
	token := strings.TrimSpace(e2etest.MustCLI(t, p, owner, "", "tokens", "create", "--name", "audit", "--scopes", "read"))
	req, err := http.NewRequestWithContext(context.Background(), "GET", p.URL+"/v1/audit/export?project="+project[1], nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	steps := map[string][]string{}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		var e struct {
			Action  string `json:"action"`
			Outcome string `json:"outcome"`
			Actor   struct {
				Email string `json:"email"`
			} `json:"actor"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e))
		steps[e.Action+" "+e.Outcome] = append(steps[e.Action+" "+e.Outcome], e.Actor.Email)
	}
	require.Equal(t, []string{"olga@example.com"}, steps["project.create success"])
	require.Equal(t, []string{"olga@example.com", "olga@example.com"}, steps["project.invite success"])
	require.ElementsMatch(t, []string{"ed@example.com", "vi@example.com"}, steps["project.accept_invitation success"])
	require.Equal(t, []string{"ed@example.com"}, steps["agent.register success"])
	require.Equal(t, []string{"ed@example.com"}, steps["run.start success"])
	require.Equal(t, []string{"vi@example.com"}, steps["run.cancel failure"], "the viewer's refused cancel")
	require.Equal(t, []string{"vi@example.com"}, steps["test.delete failure"])
	require.Empty(t, steps["run.start failure"], "a refused start names no run: it is the viewer's own entry, of no project")
}
