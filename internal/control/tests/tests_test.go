package tests_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control"
	"github.com/barrage-load/barrage/internal/control/fleet"
	"github.com/barrage-load/barrage/internal/control/tests"
	"github.com/barrage-load/barrage/internal/controltest"
)

const session = `version: 1
name: shop
variables:
  data:
    - { file: users.csv }
session:
  groups:
    - name: home
      requests:
        - { name: get home, url: "http://127.0.0.1:9/?u=${name}" }
load:
  vus: 2
  duration: 5s
`

// testBundle is a control plane and a user with the demo license.
type testBundle struct {
	*controltest.Plane
	user barrage.Principal
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	p := controltest.New(t, control.Config{})
	return &testBundle{Plane: p, user: p.User("tester@example.com", &barrage.DemoLicense)}
}

// test is a test of the bundle's user of session, with its data file.
func (b *testBundle) test(t *testing.T) barrage.Test {
	t.Helper()
	ctx := context.Background()
	tt, err := b.Tests.CreateTest(ctx, b.user, tests.TestInput{Format: barrage.FormatYAML, Source: []byte(session)})
	require.NoError(t, err)
	_, created, err := b.Tests.PutTestFile(ctx, b.user, tt.ID, "users.csv", []byte("name\nada\ngrace\n"))
	require.NoError(t, err)
	require.True(t, created)
	return tt
}

// A test keeps each session saved as a numbered revision, and the data files its session reads;
// a session the parser refuses is not saved, and names what is wrong.
func TestATestKeepsItsRevisionsAndItsDataFiles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	tt := b.test(t)
	require.Equal(t, "shop", tt.Name, "the script's name")

	saved, err := b.Tests.SaveTest(ctx, b.user, tt.ID, tests.TestInput{Format: barrage.FormatYAML, Source: []byte(strings.Replace(session, "vus: 2", "vus: 3", 1))})
	require.NoError(t, err)
	require.Equal(t, 2, saved.LatestRevision)
	revs, err := b.Tests.TestRevisions(ctx, b.user, tt.ID)
	require.NoError(t, err)
	require.Len(t, revs, 2)
	first, err := b.Tests.TestRevision(ctx, b.user, tt.ID, 1)
	require.NoError(t, err)
	require.Equal(t, session, string(first.Source), "an older revision stays readable")

	_, err = b.Tests.SaveTest(ctx, b.user, tt.ID, tests.TestInput{Format: barrage.FormatYAML, Source: []byte("version: 1\nname: x\nsession: 7\n")})
	require.ErrorIs(t, err, barrage.ErrInvalid)
	revs, err = b.Tests.TestRevisions(ctx, b.user, tt.ID)
	require.NoError(t, err)
	require.Len(t, revs, 2, "a refused session is not saved")

	_, _, err = b.Tests.PutTestFile(ctx, b.user, tt.ID, "../users.csv", []byte("name\n"))
	controltest.Invalid(t, err, "name")
	f, err := b.Tests.TestFile(ctx, b.user, tt.ID, "users.csv")
	require.NoError(t, err)
	require.Equal(t, "name\nada\ngrace\n", string(f.Content))
}

// A test without plugins is generated into a script without an agent, with its data files and a
// manifest naming the test and revision; generating it again stores no copy.
func TestGeneratingATestStoresItsScriptOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	tt := b.test(t)
	sc, err := b.Tests.GenerateScript(ctx, b.user, tt.ID, tests.JobInput{})
	require.NoError(t, err)
	require.Equal(t, session, string(sc.Source))
	require.Equal(t, tt.ID, *sc.Manifest.TestID)
	require.Equal(t, 1, sc.Manifest.TestRevision)
	require.Len(t, sc.Manifest.Files, 1)
	require.Equal(t, "users.csv", sc.Manifest.Files[0].Name)
	again, err := b.Tests.GenerateScript(ctx, b.user, tt.ID, tests.JobInput{})
	require.NoError(t, err)
	require.Equal(t, sc.ID, again.ID)

	// A data file the session reads is checked when its script is generated.
	require.NoError(t, b.Tests.DeleteTestFile(ctx, b.user, tt.ID, "users.csv"))
	_, err = b.Tests.GenerateScript(ctx, b.user, tt.ID, tests.JobInput{})
	require.ErrorIs(t, err, barrage.ErrInvalid)
	require.ErrorContains(t, err, "users.csv")
}

// agentAnswers has agent a ask for work until it is given a job, and answer it with ans; it
// returns the job it answered.
func (b *testBundle) agentAnswers(ctx context.Context, a barrage.Agent, ans fleet.JobAnswer) <-chan barrage.AgentJob {
	done := make(chan barrage.AgentJob, 1)
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			w, err := b.Fleet.Lease(ctx, a, controltest.Hello, fleet.MaxLeaseWait)
			if err != nil || len(w.Jobs) == 0 {
				continue
			}
			ans.Kind = w.Jobs[0].Kind
			if err := b.Fleet.AnswerJob(ctx, a, w.Jobs[0].ID, ans); err == nil {
				done <- w.Jobs[0]
			}
			return
		}
	}()
	return done
}

// A debug goes to an agent the user may use, with the test's revision and its data files, and
// comes back with the agent's trace; an agent that could not run it says why, as the test's
// fault.
func TestADebugGoesToAnAgentAndComesBackWithItsTrace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tt := b.test(t)
	_, _, _, err := b.Tests.DebugTest(ctx, b.user, tt.ID, tests.JobInput{})
	require.ErrorContains(t, err, "no agent of the project, nor a shared one, is online")

	a, _ := b.Agent(&b.user, "mine", barrage.Limits{})
	trace := json.RawMessage(`{"requests":[{"name":"get home","status":200}]}`)
	answered := b.agentAnswers(ctx, a, fleet.JobAnswer{Result: trace})
	by, rev, got, err := b.Tests.DebugTest(ctx, b.user, tt.ID, tests.JobInput{})
	require.NoError(t, err)
	require.Equal(t, a.ID, by.ID)
	require.Equal(t, 1, rev)
	require.JSONEq(t, string(trace), string(got))
	job := <-answered
	require.Equal(t, barrage.JobDebug, job.Kind)
	require.NotNil(t, job.Bundle)
	require.Equal(t, session, string(job.Bundle.Source))
	require.Len(t, job.Bundle.Files, 1, "the data file the session reads goes with it")

	answered = b.agentAnswers(ctx, a, fleet.JobAnswer{Error: "the target refused the connection"})
	_, _, _, err = b.Tests.DebugTest(ctx, b.user, tt.ID, tests.JobInput{AgentID: &a.ID})
	require.Contains(t, controltest.Invalid(t, err, "agent"), `agent "mine" could not debug the test: the target refused the connection`)
	<-answered
}

// A HAR recording becomes a test of the importer's, and wherever it sent one of their secrets
// the script reads the secret by name: nothing stored holds its value.
func TestImportingAHARKeepsTheImportersSecretsOutOfTheScript(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	data, err := os.ReadFile("../../har/testdata/shop-chrome.har")
	require.NoError(t, err)
	_, _, err = b.Secrets.PutSecret(ctx, b.user, nil, "SHOP_PASSWORD", "lovelace-1815")
	require.NoError(t, err)

	tt, res, err := b.Tests.ImportTest(ctx, b.user, tests.ImportInput{HAR: data})
	require.NoError(t, err)
	require.Equal(t, "recording of 127.0.0.1:8081", tt.Name)
	require.Equal(t, []string{"SHOP_PASSWORD"}, res.Secrets)
	rev, err := b.Tests.TestRevision(ctx, b.user, tt.ID, 0)
	require.NoError(t, err)
	require.Contains(t, string(rev.Source), "password: ${secret.SHOP_PASSWORD}")
	require.NotContains(t, string(rev.Source), "lovelace-1815")

	_, _, err = b.Tests.ImportTest(ctx, b.user, tests.ImportInput{HAR: []byte(`{"log": 7}`)})
	require.ErrorIs(t, err, barrage.ErrInvalid)
}

// Another user's test, its revisions, files and scripts answer not found, whatever is asked.
func TestAnotherUsersTestIsNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	tt := b.test(t)
	sc, err := b.Tests.GenerateScript(ctx, b.user, tt.ID, tests.JobInput{})
	require.NoError(t, err)
	other := b.User("other@example.com", &barrage.DemoLicense)
	in := tests.TestInput{Format: barrage.FormatYAML, Source: []byte(session)}

	for what, err := range map[string]error{
		"test": func() error { _, err := b.Tests.Test(ctx, other, tt.ID); return err }(),
		"save": func() error { _, err := b.Tests.SaveTest(ctx, other, tt.ID, in); return err }(),
		"revision": func() error {
			_, err := b.Tests.TestRevision(ctx, other, tt.ID, 1)
			return err
		}(),
		"revisions": func() error { _, err := b.Tests.TestRevisions(ctx, other, tt.ID); return err }(),
		"file":      func() error { _, err := b.Tests.TestFile(ctx, other, tt.ID, "users.csv"); return err }(),
		"put file": func() error {
			_, _, err := b.Tests.PutTestFile(ctx, other, tt.ID, "more.csv", []byte("a\n"))
			return err
		}(),
		"delete file": b.Tests.DeleteTestFile(ctx, other, tt.ID, "users.csv"),
		"generate":    func() error { _, err := b.Tests.GenerateScript(ctx, other, tt.ID, tests.JobInput{}); return err }(),
		"debug": func() error {
			_, _, _, err := b.Tests.DebugTest(ctx, other, tt.ID, tests.JobInput{})
			return err
		}(),
		"script": func() error { _, err := b.Tests.Script(ctx, other, sc.ID); return err }(),
		"delete": b.Tests.DeleteTest(ctx, other, tt.ID),
	} {
		require.ErrorIs(t, err, barrage.ErrNotFound, what)
	}
	page, err := b.Tests.Tests(ctx, other, nil, nil, 10)
	require.NoError(t, err)
	require.Empty(t, page.Items)
	_, err = b.Tests.Test(ctx, b.user, tt.ID)
	require.NoError(t, err, "its owner still has it")
	_, err = b.Tests.Test(ctx, b.user, uuid.Must(uuid.NewV7()))
	require.ErrorIs(t, err, barrage.ErrNotFound)
}
