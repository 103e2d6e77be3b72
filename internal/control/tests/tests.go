// Package tests keeps what testers edit and what agents run: tests (a session in JSON or YAML,
// saved as numbered revisions, with the data files it reads), the immutable scripts generated
// from them or uploaded, and the recordings (HAR) imported as tests. It debugs a test and
// generates its script on an agent of the fleet, since the server never executes plugin code,
// and holds what the agent answers to what the server will run.
package tests

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"regexp"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control/fleet"
	"github.com/barrage-load/barrage/internal/control/plugins"
	"github.com/barrage-load/barrage/internal/control/secrets"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/script"
)

// Store is what the tests keep in PostgreSQL (*postgres.Store). What takes projects reads or
// changes an object only within them.
type Store interface {
	CreateTest(ctx context.Context, t barrage.Test, rev barrage.TestRevision, q postgres.Quota) (barrage.Test, error)
	SaveTest(ctx context.Context, projects []uuid.UUID, id uuid.UUID, name *string, rev barrage.TestRevision, q postgres.Quota) (barrage.Test, error)
	Test(ctx context.Context, projects []uuid.UUID, id uuid.UUID) (barrage.Test, error)
	Tests(ctx context.Context, projects []uuid.UUID, before *uuid.UUID, limit int) ([]barrage.Test, error)
	DeleteTest(ctx context.Context, projects []uuid.UUID, id uuid.UUID) error
	TestRevision(ctx context.Context, projects []uuid.UUID, id uuid.UUID, n int) (barrage.TestRevision, error)
	TestRevisions(ctx context.Context, projects []uuid.UUID, id uuid.UUID) ([]barrage.TestRevision, error)
	TestBundle(ctx context.Context, projects []uuid.UUID, id uuid.UUID, n int, files postgres.DataFiles) (barrage.TestBundle, int, error)

	PutTestFile(ctx context.Context, projects []uuid.UUID, id uuid.UUID, name string, content []byte, maxFiles int, q postgres.Quota) (barrage.TestFile, bool, error)
	TestFile(ctx context.Context, projects []uuid.UUID, id uuid.UUID, name string) (barrage.TestFile, error)
	DeleteTestFile(ctx context.Context, projects []uuid.UUID, id uuid.UUID, name string) error

	CreateScript(ctx context.Context, sc barrage.Script, q postgres.Quota) (barrage.Script, bool, error)
	Script(ctx context.Context, projects []uuid.UUID, id uuid.UUID) (barrage.Script, error)

	barrage.ProjectFinder
	Throttle(ctx context.Context, key string, r barrage.Rate, cost float64, now time.Time) error
}

// Config tunes the tests; zero fields take the defaults.
type Config struct {
	// Quotas bound what each user with a license keeps (none when zero).
	Quotas barrage.Quotas
	// ConversionBudget is the server time one user's recordings may take to convert, in seconds
	// (N seconds, refilled over Per): DefaultConversionBudget when zero.
	ConversionBudget barrage.Rate
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// DefaultConversionBudget lets a user's conversions take 60 seconds of the server's time, and
// 60 more each 10 minutes: a HAR takes about a second, so dozens in a row, then one every ten
// seconds, and another user's requests keep their cores.
var DefaultConversionBudget = barrage.Rate{N: 60, Per: 10 * time.Minute}

// Deps are the services the tests work with: the fleet runs their jobs (debug, generation).
type Deps struct {
	Fleet   *fleet.Service
	Plugins *plugins.Service
	Secrets *secrets.Service
}

// Service keeps tests and scripts.
type Service struct {
	store Store
	log   *slog.Logger
	cfg   Config
	deps  Deps
}

// New returns the tests on store.
func New(store Store, log *slog.Logger, cfg Config, deps Deps) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{store: store, log: log, cfg: cfg, deps: deps}
}

// TestInput is a test's session as a user saves it, and the name to give the test (empty: the
// script's own name, else the test's current one).
type TestInput struct {
	Name   string
	Format barrage.SourceFormat
	Source []byte
	// Project is where a new test goes (nil: the principal's home project).
	Project *uuid.UUID
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

// CreateTest stores a new test in in.Project (nil: p's home project), where p is an editor, its
// session as revision 1.
func (s *Service) CreateTest(ctx context.Context, p barrage.Principal, in TestInput) (barrage.Test, error) {
	home, err := p.ProjectFor(in.Project, barrage.ProjectEditor)
	if err != nil {
		return barrage.Test{}, err
	}
	name, err := checkTest(in)
	if err != nil {
		return barrage.Test{}, err
	}
	if name == "" {
		return barrage.Test{}, barrage.Invalid("name", "give the test a name: the script's name, or ?name=")
	}
	t := barrage.Test{ID: uuid.Must(uuid.NewV7()), OwnerID: p.User.ID, ProjectID: home, Name: name}
	t, err = s.store.CreateTest(ctx, t, barrage.TestRevision{Format: in.Format, Source: in.Source}, postgres.QuotaOf(p, s.cfg.Quotas))
	if err != nil {
		return barrage.Test{}, err
	}
	t.Files = []barrage.TestFile{}
	s.log.InfoContext(ctx, "test created", slog.String("test_id", t.ID.String()))
	return t, nil
}

// SaveTest stores test id's session as its next revision (p an editor of its project); older
// revisions stay readable.
func (s *Service) SaveTest(ctx context.Context, p barrage.Principal, id uuid.UUID, in TestInput) (barrage.Test, error) {
	checked, err := checkTest(in)
	if err != nil {
		return barrage.Test{}, err
	}
	var name *string
	if in.Name != "" {
		name = &checked
	}
	t, err := s.store.SaveTest(ctx, p.Projects(barrage.ProjectEditor), id, name, barrage.TestRevision{Format: in.Format, Source: in.Source},
		postgres.QuotaOf(p, s.cfg.Quotas))
	return t, s.denied(ctx, p, err, barrage.ProjectEditor, id)
}

// Test reads test id of one of p's projects.
func (s *Service) Test(ctx context.Context, p barrage.Principal, id uuid.UUID) (barrage.Test, error) {
	return s.store.Test(ctx, p.Projects(barrage.ProjectViewer), id)
}

// Tests lists the tests of p's projects (of project alone, when given), newest first.
func (s *Service) Tests(ctx context.Context, p barrage.Principal, project *uuid.UUID, before *uuid.UUID, limit int) (barrage.Page[barrage.Test], error) {
	in, err := p.Listed(project)
	if err != nil {
		return barrage.Page[barrage.Test]{}, err
	}
	rows, err := s.store.Tests(ctx, in, before, limit+1)
	if err != nil {
		return barrage.Page[barrage.Test]{}, err
	}
	return barrage.NewPage(rows, limit, func(t barrage.Test) uuid.UUID { return t.ID }), nil
}

// DeleteTest removes test id (p an editor of its project) with its revisions and files; its
// scripts and runs stay.
func (s *Service) DeleteTest(ctx context.Context, p barrage.Principal, id uuid.UUID) error {
	return s.denied(ctx, p, s.store.DeleteTest(ctx, p.Projects(barrage.ProjectEditor), id), barrage.ProjectEditor, id)
}

// TestRevision reads revision n (0: the latest) of test id of one of p's projects.
func (s *Service) TestRevision(ctx context.Context, p barrage.Principal, id uuid.UUID, n int) (barrage.TestRevision, error) {
	return s.store.TestRevision(ctx, p.Projects(barrage.ProjectViewer), id, n)
}

// TestRevisions lists the revisions of test id of one of p's projects, newest first.
func (s *Service) TestRevisions(ctx context.Context, p barrage.Principal, id uuid.UUID) ([]barrage.TestRevision, error) {
	return s.store.TestRevisions(ctx, p.Projects(barrage.ProjectViewer), id)
}

// denied explains a change of test id that found nothing where p holds min (Principal.Denied).
func (s *Service) denied(ctx context.Context, p barrage.Principal, err error, min barrage.ProjectRole, id uuid.UUID) error {
	return p.Denied(ctx, err, min, s.store, barrage.KindTest, id)
}

// fileNameRe is what a data file may be called: the name a script's data variable gives as its
// file, with no folder.
var fileNameRe = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$`)

// MaxTestFiles bounds the data files of one test.
const MaxTestFiles = 20

// PutTestFile stores a data file of test id (p an editor of its project) under name, replacing
// one of that name.
func (s *Service) PutTestFile(ctx context.Context, p barrage.Principal, id uuid.UUID, name string, content []byte) (barrage.TestFile, bool, error) {
	if !fileNameRe.MatchString(name) {
		return barrage.TestFile{}, false, barrage.Invalid("name",
			"1 to 100 letters, digits, '.', '_' or '-', not starting with '.' or '-', and no folder: a script's data variable names its file so")
	}
	f, created, err := s.store.PutTestFile(ctx, p.Projects(barrage.ProjectEditor), id, name, content, MaxTestFiles, postgres.QuotaOf(p, s.cfg.Quotas))
	return f, created, s.denied(ctx, p, err, barrage.ProjectEditor, id)
}

// TestFile reads a data file of test id of one of p's projects.
func (s *Service) TestFile(ctx context.Context, p barrage.Principal, id uuid.UUID, name string) (barrage.TestFile, error) {
	if !fileNameRe.MatchString(name) {
		return barrage.TestFile{}, barrage.Errorf(barrage.ErrNotFound, "file not found")
	}
	return s.store.TestFile(ctx, p.Projects(barrage.ProjectViewer), id, name)
}

// DeleteTestFile removes a data file of test id (p an editor of its project).
func (s *Service) DeleteTestFile(ctx context.Context, p barrage.Principal, id uuid.UUID, name string) error {
	if !fileNameRe.MatchString(name) {
		return barrage.Errorf(barrage.ErrNotFound, "file not found")
	}
	return s.denied(ctx, p, s.store.DeleteTestFile(ctx, p.Projects(barrage.ProjectEditor), id, name), barrage.ProjectEditor, id)
}
