package control

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/script"
)

// TestInput is a test's session as a user saves it, and the name to give the test (empty: the
// script's own name, else the test's current one).
type TestInput struct {
	Name   string
	Format barrage.SourceFormat
	Source []byte
}

// checkTest validates a session with the parser `barrage run` uses (its data files are checked
// when a script is generated, since they are uploaded after the test exists) and returns the
// name the test should have: in.Name, else the script's. A refused session's name is the one
// the parser read, when valid, for a check to show.
func checkTest(in TestInput) (string, error) {
	if in.Format != barrage.FormatJSON && in.Format != barrage.FormatYAML {
		return "", barrage.Invalid("format", "must be json or yaml")
	}
	name, err := script.ParseName(in.Source, script.ParseOptions{Filename: "test"})
	name = cmp.Or(in.Name, name)
	if name == "" {
		return "", err
	}
	name, nameErr := barrage.CheckText("name", name, 1, 200)
	if err != nil {
		return name, err
	}
	return name, nameErr
}

// CheckTest checks a session as CreateTest and SaveTest do, and stores nothing: it returns the
// name the script gives ("" when it gives none, or the parser did not read that far) and the
// fields a save would refuse, none when it would take it.
func (s *Service) CheckTest(in TestInput) (string, []barrage.FieldError, error) {
	name, err := checkTest(in)
	var inv *barrage.InvalidError
	if errors.As(err, &inv) {
		return name, inv.Fields, nil
	}
	return name, nil, err
}

// CreateTest stores a new test for p, its session as revision 1.
func (s *Service) CreateTest(ctx context.Context, p barrage.Principal, in TestInput) (barrage.Test, error) {
	name, err := checkTest(in)
	if err != nil {
		return barrage.Test{}, err
	}
	if name == "" {
		return barrage.Test{}, barrage.Invalid("name", "give the test a name: the script's name, or ?name=")
	}
	t := barrage.Test{ID: uuid.Must(uuid.NewV7()), OwnerID: p.User.ID, Name: name}
	t, err = s.store.CreateTest(ctx, t, barrage.TestRevision{Format: in.Format, Source: in.Source}, s.quota(p))
	if err != nil {
		return barrage.Test{}, err
	}
	t.Files = []barrage.TestFile{}
	s.log.InfoContext(ctx, "test created", slog.String("test_id", t.ID.String()))
	return t, nil
}

// SaveTest stores p's test id's session as its next revision; older revisions stay readable.
func (s *Service) SaveTest(ctx context.Context, p barrage.Principal, id uuid.UUID, in TestInput) (barrage.Test, error) {
	checked, err := checkTest(in)
	if err != nil {
		return barrage.Test{}, err
	}
	var name *string
	if in.Name != "" {
		name = &checked
	}
	return s.store.SaveTest(ctx, p.User.ID, id, name, barrage.TestRevision{Format: in.Format, Source: in.Source}, s.quota(p))
}

// Test reads p's test id.
func (s *Service) Test(ctx context.Context, p barrage.Principal, id uuid.UUID) (barrage.Test, error) {
	return s.store.Test(ctx, p.User.ID, id)
}

// Tests lists p's tests, newest first.
func (s *Service) Tests(ctx context.Context, p barrage.Principal, before *uuid.UUID, limit int) (barrage.Page[barrage.Test], error) {
	rows, err := s.store.Tests(ctx, p.User.ID, before, limit+1)
	if err != nil {
		return barrage.Page[barrage.Test]{}, err
	}
	return barrage.NewPage(rows, limit, func(t barrage.Test) uuid.UUID { return t.ID }), nil
}

// DeleteTest removes p's test id with its revisions and files; its scripts and runs stay.
func (s *Service) DeleteTest(ctx context.Context, p barrage.Principal, id uuid.UUID) error {
	return s.store.DeleteTest(ctx, p.User.ID, id)
}

// TestRevision reads revision n (0: the latest) of p's test id.
func (s *Service) TestRevision(ctx context.Context, p barrage.Principal, id uuid.UUID, n int) (barrage.TestRevision, error) {
	return s.store.TestRevision(ctx, p.User.ID, id, n)
}

// TestRevisions lists the revisions of p's test id, newest first.
func (s *Service) TestRevisions(ctx context.Context, p barrage.Principal, id uuid.UUID) ([]barrage.TestRevision, error) {
	return s.store.TestRevisions(ctx, p.User.ID, id)
}

// fileNameRe is what a data file may be called: the name a script's data variable gives as its
// file, with no folder.
var fileNameRe = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$`)

// MaxTestFiles bounds the data files of one test.
const MaxTestFiles = 20

// PutTestFile stores a data file of p's test id under name, replacing one of that name.
func (s *Service) PutTestFile(ctx context.Context, p barrage.Principal, id uuid.UUID, name string, content []byte) (barrage.TestFile, bool, error) {
	if !fileNameRe.MatchString(name) {
		return barrage.TestFile{}, false, barrage.Invalid("name",
			"1 to 100 letters, digits, '.', '_' or '-', not starting with '.' or '-', and no folder: a script's data variable names its file so")
	}
	return s.store.PutTestFile(ctx, p.User.ID, id, name, content, MaxTestFiles, s.quota(p))
}

// TestFile reads a data file of p's test id.
func (s *Service) TestFile(ctx context.Context, p barrage.Principal, id uuid.UUID, name string) (barrage.TestFile, error) {
	if !fileNameRe.MatchString(name) {
		return barrage.TestFile{}, barrage.Errorf(barrage.ErrNotFound, "file not found")
	}
	return s.store.TestFile(ctx, p.User.ID, id, name)
}

// DeleteTestFile removes a data file of p's test id.
func (s *Service) DeleteTestFile(ctx context.Context, p barrage.Principal, id uuid.UUID, name string) error {
	if !fileNameRe.MatchString(name) {
		return barrage.Errorf(barrage.ErrNotFound, "file not found")
	}
	return s.store.DeleteTestFile(ctx, p.User.ID, id, name)
}

// JobWait is how long a debug or a generation waits for its agent; an agent gives a debug
// DebugTimeout, and the rest is for the way there and back.
const JobWait = 45 * time.Second

// MaxOpenJobs is how many debug and generate jobs of one user may wait for an answer at once:
// agents are shared, and a job holds its asker's request open while it waits.
const MaxOpenJobs = 4

// DebugTimeout bounds one traced iteration on an agent.
const DebugTimeout = 35 * time.Second

// JobInput says which revision of a test a job is for (0: the latest) and on which agent (nil:
// the first online one p may use, p's own first).
type JobInput struct {
	Revision int
	AgentID  *uuid.UUID
}

// DebugTest runs one traced iteration of one VU of p's test on an agent and returns the agent
// that ran it, the revision, and its trace as the agent reported it (JSON).
func (s *Service) DebugTest(ctx context.Context, p barrage.Principal, id uuid.UUID, in JobInput) (barrage.Agent, int, json.RawMessage, error) {
	b, n, err := s.store.TestBundle(ctx, p.User.ID, id, in.Revision, dataFiles)
	if err != nil {
		return barrage.Agent{}, 0, nil, err
	}
	parsed, err := loadBundle(b.Source, b.Files)
	if err != nil {
		return barrage.Agent{}, 0, nil, err
	}
	plugins, err := s.resolvePlugins(ctx, p, parsed)
	if err != nil {
		return barrage.Agent{}, 0, nil, err
	}
	if _, err := s.secretValues(ctx, p.User.ID, parsed.Secrets); err != nil {
		return barrage.Agent{}, 0, nil, err
	}
	a, j, err := s.runJob(ctx, p, barrage.AgentJob{Kind: barrage.JobDebug, TestID: id, Revision: n}, in.AgentID, plugins)
	if err != nil {
		return a, n, nil, err
	}
	return a, n, j.Result, nil
}

// Generated is what a generation on an agent answers: the script after its source plugins, with
// those removed from its plugins (they have done their work), and every plugin it named pinned
// by the digest of the binary the agent found.
type Generated struct {
	Source  []byte              `json:"source"`
	Plugins []barrage.PluginPin `json:"plugins"`
}

// GenerateScript turns revision in.Revision of p's test into an immutable script: its source
// plugins run on an agent (the server never executes plugin code), every plugin is pinned by
// digest, the result is checked with the test's data files like any script, and stored with
// them and a manifest naming the test, the revision and the plugins. A test without plugins
// needs no agent. A script that is one p has already is not stored again, that one returned:
// generating a revision again (or running it again) stores no copy.
func (s *Service) GenerateScript(ctx context.Context, p barrage.Principal, id uuid.UUID, in JobInput) (barrage.Script, error) {
	b, n, err := s.store.TestBundle(ctx, p.User.ID, id, in.Revision, dataFiles)
	if err != nil {
		return barrage.Script{}, err
	}
	parsed, err := loadBundle(b.Source, b.Files)
	if err != nil {
		return barrage.Script{}, err
	}
	return s.generate(ctx, p, id, n, b, parsed, in.AgentID)
}

// generate is GenerateScript of revision n of test id, read as b and parsed.
func (s *Service) generate(ctx context.Context, p barrage.Principal, id uuid.UUID, n int, b barrage.TestBundle, parsed *script.Script, agentID *uuid.UUID) (barrage.Script, error) {
	gen := Generated{Source: b.Source, Plugins: []barrage.PluginPin{}}
	if len(parsed.Plugins) > 0 {
		plugins, err := s.resolvePlugins(ctx, p, parsed)
		if err != nil {
			return barrage.Script{}, err
		}
		_, j, err := s.runJob(ctx, p, barrage.AgentJob{Kind: barrage.JobGenerate, TestID: id, Revision: n}, agentID, plugins)
		if err != nil {
			return barrage.Script{}, err
		}
		if err := json.Unmarshal(j.Result, &gen); err != nil {
			return barrage.Script{}, fmt.Errorf("job %s: the agent's answer: %w", j.ID, err)
		}
		if err := checkGenerated(gen, b.Files); err != nil {
			return barrage.Script{}, err
		}
		if err := checkMarketPins(gen.Plugins, plugins); err != nil {
			return barrage.Script{}, err
		}
	}
	testID := id
	return s.storeScript(ctx, p, b.Name, gen.Source, b.Files, barrage.ScriptManifest{TestID: &testID, TestRevision: n, Plugins: gen.Plugins})
}

// checkGenerated holds an agent's generated script to what the server will run: a valid script
// with the test's data files, without source plugins, each plugin it uses pinned exactly once,
// at the version and kind it names, and no pin for a plugin it does not use.
func checkGenerated(g Generated, files []barrage.ScriptFile) error {
	parsed, err := loadBundle(g.Source, files)
	if err != nil {
		return fmt.Errorf("the source plugins made a script that is not valid:\n%w", err)
	}
	if len(g.Plugins) != len(parsed.Plugins) {
		return barrage.Invalid("plugins", fmt.Sprintf("the agent pinned %d plugins; the script uses %d", len(g.Plugins), len(parsed.Plugins)))
	}
	for _, sp := range parsed.Plugins {
		if sp.Kind == script.SourcePlugin {
			return barrage.Invalid("plugins."+sp.As, "the generated script still lists a source plugin")
		}
		i := slices.IndexFunc(g.Plugins, func(pin barrage.PluginPin) bool { return pin.Alias == sp.As })
		if i < 0 || g.Plugins[i].Name != sp.Name || g.Plugins[i].Version != sp.Version || g.Plugins[i].Kind != sp.Kind.String() ||
			!sha256Re.MatchString(g.Plugins[i].SHA256) {
			return barrage.Invalid("plugins."+sp.As, fmt.Sprintf("the agent did not pin %s (%s) by its digest", sp.Ref, sp.Kind))
		}
	}
	return nil
}

var sha256Re = regexp.MustCompile(`^[0-9a-f]{64}$`)

// dataFiles names the files a test's source reads (none when it does not parse: loading it
// then says why).
func dataFiles(source []byte) []string {
	parsed, err := script.Parse(source, script.ParseOptions{})
	if err != nil {
		return nil
	}
	return parsed.Files()
}

// loadBundle checks a script with its data files by name, as an agent will load it.
func loadBundle(source []byte, files []barrage.ScriptFile) (*script.Script, error) {
	byName := make(map[string][]byte, len(files))
	for _, f := range files {
		byName[f.Name] = f.Content
	}
	// The server runs nothing: the files' rows are checked, not kept.
	return script.LoadData(script.BundleFS(byName), script.BundleName, source, script.ParseOptions{Filename: script.BundleName, CheckDataOnly: true})
}

// storeScript stores a checked script for p with its data files and manifest, the files'
// digests added to it; a script p has already is returned rather than stored again.
func (s *Service) storeScript(ctx context.Context, p barrage.Principal, name string, source []byte, files []barrage.ScriptFile, m barrage.ScriptManifest) (barrage.Script, error) {
	sum := sha256.Sum256(source)
	m.Files = []barrage.ScriptFileRef{}
	for _, f := range files {
		fs := sha256.Sum256(f.Content)
		m.Files = append(m.Files, barrage.ScriptFileRef{Name: f.Name, SHA256: hex.EncodeToString(fs[:]), Size: int64(len(f.Content))})
	}
	if m.Plugins == nil {
		m.Plugins = []barrage.PluginPin{}
	}
	sc := barrage.Script{ID: uuid.Must(uuid.NewV7()), OwnerID: p.User.ID, Name: name, Source: source, SHA256: sum[:], Files: files, Manifest: m}
	sc, created, err := s.store.CreateScript(ctx, sc, s.quota(p))
	if err != nil {
		return barrage.Script{}, err
	}
	if created {
		s.log.InfoContext(ctx, "script stored", slog.String("script_id", sc.ID.String()))
	}
	return sc, nil
}

// runJob hands j, whose test uses the marketplace plugins given, to an agent p may use that may
// run them, and waits for its answer. An answer that is an error comes back as an invalid
// input, since it is the test that the agent could not run (a plugin it does not have, a config
// its plugin refused).
func (s *Service) runJob(ctx context.Context, p barrage.Principal, j barrage.AgentJob, agentID *uuid.UUID, plugins []marketPlugin) (barrage.Agent, barrage.AgentJob, error) {
	a, err := s.jobAgent(ctx, p, agentID, plugins)
	if err != nil {
		return a, j, err
	}
	j.ID, j.AgentID, j.OwnerID, j.Plugins = uuid.Must(uuid.NewV7()), a.ID, p.User.ID, pinsOf(plugins)
	err = s.await(ctx, j.ID, JobWait, func() error {
		return s.store.CreateAgentJob(ctx, j, MaxOpenJobs, s.now().Add(-JobWait))
	}, func() (bool, error) {
		var err error
		j, err = s.store.AgentJob(ctx, j.ID)
		return err == nil && j.Answered != nil, err
	})
	switch {
	case errors.Is(err, barrage.ErrNoAnswer):
		return a, j, barrage.Errorf(barrage.ErrNoAnswer, "agent %q did not answer within %s", a.Name, JobWait)
	case err != nil:
		return a, j, err
	case j.TestID == uuid.Nil:
		return a, j, barrage.Errorf(barrage.ErrNotFound, "test not found: it was deleted while agent %q had the %s", a.Name, j.Kind)
	case j.Error != "":
		return a, j, barrage.Invalid("agent", fmt.Sprintf("agent %q could not %s the test: %s", a.Name, j.Kind, j.Error))
	}
	return a, j, nil
}

// jobAgent is the agent a job goes to: the one asked for, else the first online one p may use
// that may run the job's marketplace plugins. Jobs go to busy agents too: they are small, and
// an agent does them beside its shard.
func (s *Service) jobAgent(ctx context.Context, p barrage.Principal, id *uuid.UUID, plugins []marketPlugin) (barrage.Agent, error) {
	now := s.now()
	if id != nil {
		a, err := s.store.UsableAgent(ctx, p.User.ID, *id)
		if err != nil {
			return a, err
		}
		if st := a.State(now); st == barrage.AgentOffline || st == barrage.AgentDisabled {
			return a, barrage.Invalid("agent_id", fmt.Sprintf("agent %q is %s", a.Name, st))
		}
		return a, canRunOn(a, plugins, "agent_id")
	}
	all, err := s.store.UsableAgents(ctx, p.User.ID)
	if err != nil {
		return barrage.Agent{}, err
	}
	var refused error
	for _, a := range all {
		if st := a.State(now); st != barrage.AgentOnline && st != barrage.AgentBusy {
			continue
		}
		if refused = canRunOn(a, plugins, "agent_id"); refused == nil {
			return a, nil
		}
	}
	if refused != nil {
		return barrage.Agent{}, refused
	}
	return barrage.Agent{}, barrage.Invalid("agent_id", "no agent you may use is online: start one (barrage agent) or ask an admin")
}

// JobAnswer is an agent's answer to a job: its result, of the job's kind, or why it could not
// do it.
type JobAnswer struct {
	Kind   barrage.JobKind
	Result json.RawMessage
	Error  string
}

// AnswerJob records agent a's answer to its job id.
func (s *Service) AnswerJob(ctx context.Context, a barrage.Agent, id uuid.UUID, ans JobAnswer) error {
	var errText *string
	if ans.Error != "" {
		errText = &ans.Error
	}
	if ans.Error == "" && len(ans.Result) == 0 {
		return barrage.Invalid("result", "give the job's result or its error")
	}
	if ans.Error == "" {
		j, err := s.store.AgentJob(ctx, id)
		if err != nil || j.AgentID != a.ID {
			return barrage.Errorf(barrage.ErrNotFound, "job not found")
		}
		if j.Kind != ans.Kind {
			return barrage.Invalid(string(ans.Kind), fmt.Sprintf("the job is a %s: answer with its result or an error", j.Kind))
		}
	}
	return s.store.AnswerAgentJob(ctx, a.ID, id, ans.Result, errText)
}

// await waits up to timeout for done to report true, woken when key is notified (on any
// replica) and checking every PollEvery besides. start runs first, once the wake-up is
// subscribed to, so that no answer is missed. It returns barrage.ErrNoAnswer on timeout.
func (s *Service) await(ctx context.Context, key uuid.UUID, timeout time.Duration, start func() error, done func() (bool, error)) error {
	woken, stop := s.runs.Subscribe(key.String())
	defer stop()
	if err := start(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ok, err := done()
		if ok {
			return nil
		}
		if err != nil && ctx.Err() == nil {
			return err
		}
		t := time.NewTimer(s.cfg.PollEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return barrage.ErrNoAnswer
		case <-woken:
			t.Stop()
		case <-t.C:
		}
	}
}
