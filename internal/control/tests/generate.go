package tests

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"slices"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control/plugins"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/script"
)

// JobInput says which revision of a test a job is for (0: the latest) and on which agent (nil:
// the first online one p may use, p's own first).
type JobInput struct {
	Revision int
	AgentID  *uuid.UUID
}

// Revision is a revision of a test read with its data files and checked as an agent will load
// it.
type Revision struct {
	TestID uuid.UUID
	N      int
	Bundle barrage.TestBundle
	Script *script.Script
}

// Load reads revision n (0: the latest) of test id with its data files, and checks it as an
// agent will load it; p must hold min in the test's project: what loads a test does so to run
// it (a runner debugs, generates and runs the tests there are).
func (s *Service) Load(ctx context.Context, p barrage.Principal, id uuid.UUID, n int, min barrage.ProjectRole) (Revision, error) {
	b, n, err := s.store.TestBundle(ctx, p.Projects(min), id, n, script.FilesOf)
	if err != nil {
		return Revision{}, s.denied(ctx, p, err, min, id)
	}
	parsed, err := script.CheckBundle(b.Source, b.Files)
	if err != nil {
		return Revision{}, err
	}
	return Revision{TestID: id, N: n, Bundle: b, Script: parsed}, nil
}

// DebugTest runs one traced iteration of one VU of p's test on an agent and returns the agent
// that ran it, the revision, and its trace as the agent reported it (JSON).
func (s *Service) DebugTest(ctx context.Context, p barrage.Principal, id uuid.UUID, in JobInput) (barrage.Agent, int, json.RawMessage, error) {
	rev, err := s.Load(ctx, p, id, in.Revision, barrage.ProjectRunner)
	if err != nil {
		return barrage.Agent{}, 0, nil, err
	}
	market, err := s.deps.Plugins.Resolve(ctx, p, rev.Script)
	if err != nil {
		return barrage.Agent{}, 0, nil, err
	}
	if _, err := s.deps.Secrets.Values(ctx, rev.Bundle.ProjectID, rev.Script.Secrets); err != nil {
		return barrage.Agent{}, 0, nil, err
	}
	a, j, err := s.deps.Fleet.RunJob(ctx, p, rev.Bundle.ProjectID, barrage.AgentJob{Kind: barrage.JobDebug, TestID: id, Revision: rev.N}, in.AgentID, market)
	if err != nil {
		return a, rev.N, nil, err
	}
	return a, rev.N, j.Result, nil
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
	rev, err := s.Load(ctx, p, id, in.Revision, barrage.ProjectRunner)
	if err != nil {
		return barrage.Script{}, err
	}
	return s.Generate(ctx, p, rev, in.AgentID)
}

// Generate is GenerateScript of a revision of p's test already loaded, on agent agentID (nil:
// the first online one p may use that may run its plugins).
func (s *Service) Generate(ctx context.Context, p barrage.Principal, rev Revision, agentID *uuid.UUID) (barrage.Script, error) {
	b := rev.Bundle
	gen := Generated{Source: b.Source, Plugins: []barrage.PluginPin{}}
	if len(rev.Script.Plugins) > 0 {
		market, err := s.deps.Plugins.Resolve(ctx, p, rev.Script)
		if err != nil {
			return barrage.Script{}, err
		}
		_, j, err := s.deps.Fleet.RunJob(ctx, p, b.ProjectID, barrage.AgentJob{Kind: barrage.JobGenerate, TestID: rev.TestID, Revision: rev.N}, agentID, market)
		if err != nil {
			return barrage.Script{}, err
		}
		if err := json.Unmarshal(j.Result, &gen); err != nil {
			return barrage.Script{}, fmt.Errorf("job %s: the agent's answer: %w", j.ID, err)
		}
		if err := checkGenerated(gen, b.Files); err != nil {
			return barrage.Script{}, err
		}
		if err := plugins.CheckPins(gen.Plugins, market); err != nil {
			return barrage.Script{}, err
		}
	}
	testID := rev.TestID
	return s.storeScript(ctx, p, b.ProjectID, b.Name, gen.Source, b.Files, barrage.ScriptManifest{TestID: &testID, TestRevision: rev.N, Plugins: gen.Plugins})
}

// checkGenerated holds an agent's generated script to what the server will run: a valid script
// with the test's data files, without source plugins, each plugin it uses pinned exactly once,
// at the version and kind it names, and no pin for a plugin it does not use.
func checkGenerated(g Generated, files []barrage.ScriptFile) error {
	parsed, err := script.CheckBundle(g.Source, files)
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

// storeScript stores a checked script made by p in project with its data files and manifest,
// the files' digests added to it; a script the project has already is returned rather than
// stored again.
func (s *Service) storeScript(ctx context.Context, p barrage.Principal, project uuid.UUID, name string, source []byte, files []barrage.ScriptFile, m barrage.ScriptManifest) (barrage.Script, error) {
	sum := sha256.Sum256(source)
	m.Files = []barrage.ScriptFileRef{}
	for _, f := range files {
		fs := sha256.Sum256(f.Content)
		m.Files = append(m.Files, barrage.ScriptFileRef{Name: f.Name, SHA256: hex.EncodeToString(fs[:]), Size: int64(len(f.Content))})
	}
	if m.Plugins == nil {
		m.Plugins = []barrage.PluginPin{}
	}
	sc := barrage.Script{ID: uuid.Must(uuid.NewV7()), OwnerID: p.User.ID, ProjectID: project, Name: name, Source: source, SHA256: sum[:], Files: files, Manifest: m}
	sc, created, err := s.store.CreateScript(ctx, sc, postgres.QuotaOf(p, s.cfg.Quotas))
	if err != nil {
		return barrage.Script{}, err
	}
	if created {
		s.log.InfoContext(ctx, "script stored", slog.String("script_id", sc.ID.String()))
	}
	return sc, nil
}
