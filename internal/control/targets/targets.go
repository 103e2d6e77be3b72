// Package targets keeps the targets users register and prove they control (beside package
// ownership, which checks a proof), and says what a run or a job on a shared agent may load:
// the operator's open destinations and the owner's targets verified again at a run's start,
// each pinned to the address that proved it, within the cap of VUs every user's runs together
// may aim at one address.
package targets

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/netpolicy"
	"github.com/barrage-load/barrage/internal/ownership"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/script"
)

// Store is what the targets keep in PostgreSQL (*postgres.Store).
type Store interface {
	CreateTarget(ctx context.Context, t barrage.Target, q postgres.Quota) (barrage.Target, error)
	Target(ctx context.Context, projects []uuid.UUID, id uuid.UUID) (barrage.Target, error)
	Targets(ctx context.Context, projects []uuid.UUID) ([]barrage.Target, error)
	DeleteTarget(ctx context.Context, projects []uuid.UUID, id uuid.UUID) error
	TargetChecked(ctx context.Context, projects []uuid.UUID, id uuid.UUID, at time.Time, address netip.Addr, checkError string) (barrage.Target, error)
	barrage.ProjectFinder
	Throttle(ctx context.Context, key string, r barrage.Rate, cost float64, now time.Time) error
}

// Config says what runs on shared agents may load: the operator's open targets, and the
// targets their owners proved they control, checked by Checker.
type Config struct {
	// Open are destinations (netpolicy.Destination) anyone's runs may load; All opens every one.
	Open map[string]bool
	All  bool
	// Checker checks a target's proof (default: ownership.New(nil, nil), which reaches no
	// internal address).
	Checker *ownership.Checker
	// MaxVUsPerAddress caps the VUs that every user's runs on shared agents together may aim
	// at one address that proved control of a target; 0 sets no cap.
	MaxVUsPerAddress int
	// Quotas bound what each user with a license keeps (none when zero).
	Quotas barrage.Quotas
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Service keeps users' targets and checks them.
type Service struct {
	store Store
	log   *slog.Logger
	cfg   Config
}

// New returns the targets on store.
func New(store Store, log *slog.Logger, cfg Config) *Service {
	if cfg.Checker == nil {
		cfg.Checker = ownership.New(nil, nil)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{store: store, log: log, cfg: cfg}
}

// CreateTarget registers the target at rawURL in project (nil: p's home project, where p must be
// an editor), with a token of its own, not yet verified.
func (s *Service) CreateTarget(ctx context.Context, p barrage.Principal, project *uuid.UUID, rawURL string) (barrage.Target, error) {
	in, err := p.ProjectFor(project, barrage.ProjectEditor)
	if err != nil {
		return barrage.Target{}, err
	}
	t, err := barrage.ParseTarget(rawURL)
	if err != nil {
		return barrage.Target{}, err
	}
	t.ID, t.OwnerID, t.ProjectID, t.Token = uuid.Must(uuid.NewV7()), p.User.ID, in, strings.ToLower(rand.Text())
	t, err = s.store.CreateTarget(ctx, t, postgres.QuotaOf(p, s.cfg.Quotas))
	if err != nil {
		return barrage.Target{}, err
	}
	s.log.InfoContext(ctx, "target registered", slog.String("target_id", t.ID.String()), slog.String("destination", t.Destination()))
	return s.withOpen(t), nil
}

// withOpen is t saying whether the operator opened its destination to everyone.
func (s *Service) withOpen(t barrage.Target) barrage.Target {
	t.Open = s.cfg.All || s.cfg.Open[t.Destination()]
	return t
}

// Targets lists the targets of p's projects (of project alone, when given).
func (s *Service) Targets(ctx context.Context, p barrage.Principal, project *uuid.UUID) ([]barrage.Target, error) {
	in, err := p.Listed(project)
	if err != nil {
		return nil, err
	}
	ts, err := s.store.Targets(ctx, in)
	for i := range ts {
		ts[i] = s.withOpen(ts[i])
	}
	return ts, err
}

// Target reads target id of one of p's projects.
func (s *Service) Target(ctx context.Context, p barrage.Principal, id uuid.UUID) (barrage.Target, error) {
	t, err := s.store.Target(ctx, p.Projects(barrage.ProjectViewer), id)
	return s.withOpen(t), err
}

// DeleteTarget removes target id (p an editor of its project): runs started after no longer load
// it from shared agents.
func (s *Service) DeleteTarget(ctx context.Context, p barrage.Principal, id uuid.UUID) error {
	err := s.store.DeleteTarget(ctx, p.Projects(barrage.ProjectEditor), id)
	return p.Denied(ctx, err, barrage.ProjectEditor, s.store, barrage.KindTarget, id)
}

// VerifyTarget checks target id (p an editor of its project) now and records the outcome, which
// the target returned says (Verified, CheckError). Checks asked for are throttled per account
// (VerifyRate): each is a request the server sends on its user's word.
func (s *Service) VerifyTarget(ctx context.Context, p barrage.Principal, id uuid.UUID) (barrage.Target, error) {
	t, err := s.store.Target(ctx, p.Projects(barrage.ProjectEditor), id)
	if err != nil {
		return barrage.Target{}, p.Denied(ctx, err, barrage.ProjectEditor, s.store, barrage.KindTarget, id)
	}
	if err := s.store.Throttle(ctx, "verify:"+p.User.ID.String(), VerifyRate, 1, s.cfg.Now()); err != nil {
		return barrage.Target{}, err
	}
	t, err = s.check(ctx, t)
	return s.withOpen(t), err
}

// VerifyRate is how many checks of their targets a user may ask for; StartCheckRate how many
// the starts of their runs may make.
var (
	VerifyRate     = barrage.Rate{N: 20, Per: 10 * time.Minute}
	StartCheckRate = barrage.Rate{N: 300, Per: 10 * time.Minute}
)

// check checks t and records the outcome.
func (s *Service) check(ctx context.Context, t barrage.Target) (barrage.Target, error) {
	why := ""
	at, err := s.cfg.Checker.Check(ctx, t)
	if err != nil {
		why = err.Error()
	}
	return s.store.TargetChecked(ctx, []uuid.UUID{t.ProjectID}, t.ID, s.cfg.Now(), at, why)
}

// Destinations are what p's run of parsed in project may load when one of its agents is shared:
// the operator's open targets, and the project's targets verified again now, each pinned to the
// address that proved it. Every destination the script names must be one of them, else the run
// is refused before any agent is asked. A script that builds a host at run time may reach any of
// the project's targets that the check proves now. Nil when every target is open.
func (s *Service) Destinations(ctx context.Context, p barrage.Principal, project uuid.UUID, parsed *script.Script) ([]string, error) {
	if s.cfg.All {
		return nil, nil
	}
	switch n := &parsed.Network; {
	case len(n.Hosts) > 0:
		return nil, barrage.Invalid("hosts", "name overrides are for your own agents: a shared agent dials each target at the address it was verified at")
	case n.Proxy != nil:
		return nil, barrage.Invalid("proxy", "a proxy is for your own agents: a shared agent dials each target at the address it was verified at")
	}
	named, dynamic := scriptDestinations(parsed)
	mine, err := s.store.Targets(ctx, []uuid.UUID{project})
	if err != nil {
		return nil, err
	}
	byDest := make(map[string]barrage.Target, len(mine))
	for _, t := range mine {
		byDest[t.Destination()] = t
	}
	var problems []string
	var check []barrage.Target
	for _, d := range named {
		t, ok := byDest[d]
		switch {
		case s.cfg.Open[d]:
		case !ok:
			problems = append(problems, fmt.Sprintf("%s is not a target of the project: register it (barrage targets add) and prove you control it", d))
		case !t.Verified():
			problems = append(problems, fmt.Sprintf("%s is not verified: prove you control it, then check it (barrage targets verify %s)", d, t.ID))
		default:
			check = append(check, t)
		}
	}
	if len(problems) > 0 {
		return nil, barrage.Invalid("targets", "a shared agent loads only targets their owners proved they control: "+strings.Join(problems, "; "))
	}
	if dynamic {
		for _, t := range mine {
			if t.Verified() && !slices.ContainsFunc(check, func(c barrage.Target) bool { return c.ID == t.ID }) {
				check = append(check, t)
			}
		}
	}
	// Each check is a request the server sends on p's word: throttled, apart from the checks
	// p asks for, and only of targets already proved.
	if len(check) == 0 {
		return s.openDestinations(), nil
	}
	if err := s.store.Throttle(ctx, "start-checks:"+p.User.ID.String(), StartCheckRate, float64(len(check)), s.cfg.Now()); err != nil {
		return nil, err
	}
	// Checked again at each run's start, at once: a target that stopped serving its proof is
	// loaded no more.
	checked := make([]barrage.Target, len(check))
	errs := make([]error, len(check))
	var wg sync.WaitGroup
	for i, t := range check {
		wg.Go(func() { checked[i], errs[i] = s.check(ctx, t) })
	}
	wg.Wait()
	out := s.openDestinations()
	for i, t := range checked {
		switch {
		case errs[i] != nil:
			return nil, errs[i]
		case t.Verified():
			out = append(out, t.Pinned())
		case slices.Contains(named, t.Destination()):
			problems = append(problems, fmt.Sprintf("%s: %s", t.Destination(), t.CheckError))
		}
	}
	if len(problems) > 0 {
		return nil, barrage.Invalid("targets", "a shared agent loads only targets their owners proved they control, checked at each run's start: "+strings.Join(problems, "; "))
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Verified are what a job on a test of project on a shared agent may reach: the operator's open
// targets and the project's targets verified at their latest check; nil when every target is
// open.
func (s *Service) Verified(ctx context.Context, project uuid.UUID) ([]string, error) {
	if s.cfg.All {
		return nil, nil
	}
	mine, err := s.store.Targets(ctx, []uuid.UUID{project})
	if err != nil {
		return nil, err
	}
	out := s.openDestinations()
	for _, t := range mine {
		if t.Verified() {
			out = append(out, t.Pinned())
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// openDestinations are the operator's open targets, in order, never nil.
func (s *Service) openDestinations() []string {
	out := make([]string, 0, len(s.cfg.Open))
	for d := range s.cfg.Open {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// scriptDestinations are the destinations the script names (its requests' URLs, the base URL
// folded in, and its monitors'), each once; dynamic says whether a request's host is built at
// run time, from a variable other than a constant or an environment variable's default.
func scriptDestinations(s *script.Script) (named []string, dynamic bool) {
	known := map[string]string{}
	for _, c := range s.Variables.Constants {
		known[c.Name] = c.Value
	}
	for _, e := range s.Variables.Env {
		if e.HasDefault {
			known[e.Name] = e.Default
		}
	}
	lookup := func(name string) (string, bool) { v, ok := known[name]; return v, ok }
	add := func(raw string, complete bool) {
		d, ok := destinationOf(raw, complete)
		if !ok {
			dynamic = true
			return
		}
		if !slices.Contains(named, d) {
			named = append(named, d)
		}
	}
	for _, r := range s.Session.Requests() {
		buf, err := r.URL.Render(lookup, nil)
		add(string(buf), err == nil)
	}
	for _, m := range s.Monitors {
		add(m.URL, true)
	}
	slices.Sort(named)
	return named, dynamic
}

// destinationOf reads the host and port of a URL, or of the start of one cut at a variable
// (complete false): known only when the host ends before the cut.
func destinationOf(raw string, complete bool) (string, bool) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return "", false
	}
	if !complete {
		end := strings.IndexAny(rest, "/?#")
		if end < 0 {
			return "", false
		}
		raw = scheme + "://" + rest[:end]
	}
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return "", false
	}
	port := u.Port()
	if port == "" {
		port = strconv.Itoa(barrage.DefaultPort(u.Scheme))
	}
	return netpolicy.JoinDestination(u.Hostname(), port), true
}

// Settings are the operator's settings of what runs on shared agents may load, as the server
// was started with them.
type Settings struct {
	// Open are the destinations opened to every user's runs (the demo agent's among them while
	// it runs), sorted; All says every destination is open.
	Open []string
	All  bool
	// MaxVUsPerAddress caps the VUs every user's runs together may aim at one address that
	// proved control of a target; 0 sets no cap.
	MaxVUsPerAddress int
}

// Settings returns the operator's settings, for admins to read.
func (s *Service) Settings() Settings {
	return Settings{Open: s.openDestinations(), All: s.cfg.All, MaxVUsPerAddress: s.cfg.MaxVUsPerAddress}
}

// MaxVUsPerAddress is the cap on the VUs every user's runs on shared agents together may aim at
// one address that proved control of a target; 0 sets none.
func (s *Service) MaxVUsPerAddress() int { return s.cfg.MaxVUsPerAddress }

// CheckLoads refuses run r when with it the runs not ended aim more VUs at one of its proved
// addresses than the cap (none when it is 0): loads are those VUs by address, r's counted.
func (s *Service) CheckLoads(r barrage.Run, loads map[string]int64) error {
	capVUs := s.cfg.MaxVUsPerAddress
	if capVUs <= 0 {
		return nil
	}
	for _, a := range r.PinnedAddresses() {
		if loads[a] > int64(capVUs) {
			return barrage.Invalid("vus", fmt.Sprintf("runs not ended aim %d VUs at %s already; with this run's %d they would pass the %d "+
				"that every user's runs together may aim at one address: try later, or with fewer VUs", loads[a]-int64(r.VUs), a, r.VUs, capVUs))
		}
	}
	return nil
}
