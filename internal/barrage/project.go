package barrage

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"
)

// ProjectRole is what a member may do in a project; each role may do what the ones below it may.
type ProjectRole string

// The roles in a project, from the most to the least.
const (
	// ProjectOwner manages the members and the settings, and may delete the project.
	ProjectOwner ProjectRole = "owner"
	// ProjectEditor writes tests, scripts, agents, targets and secrets, and runs them.
	ProjectEditor ProjectRole = "editor"
	// ProjectRunner starts and cancels runs of the tests and scripts there are, and reads
	// everything.
	ProjectRunner ProjectRole = "runner"
	// ProjectViewer reads everything.
	ProjectViewer ProjectRole = "viewer"
)

// ProjectRoles are the roles, from the most to the least.
var ProjectRoles = []ProjectRole{ProjectOwner, ProjectEditor, ProjectRunner, ProjectViewer}

// Valid reports whether r is a known role.
func (r ProjectRole) Valid() bool { return slices.Contains(ProjectRoles, r) }

// article is "an" before a role that reads with a vowel, else "a".
func (r ProjectRole) article() string {
	if r == ProjectOwner || r == ProjectEditor {
		return "an"
	}
	return "a"
}

// AtLeast reports whether r may do what min may.
func (r ProjectRole) AtLeast(min ProjectRole) bool {
	i, j := slices.Index(ProjectRoles, r), slices.Index(ProjectRoles, min)
	return i >= 0 && j >= 0 && i <= j
}

// Project is what a team shares: tests, scripts, runs, private agents, targets and secrets.
type Project struct {
	ID   uuid.UUID
	Name string
	// Personal says it is its user's own project, made with the account; it cannot be deleted.
	Personal bool
	// Role is the reader's role in it.
	Role      ProjectRole
	Members   int
	CreatedAt time.Time
}

// ProjectMember is a user's place in a project.
type ProjectMember struct {
	UserID  uuid.UUID
	Email   string
	Name    string
	Role    ProjectRole
	AddedAt time.Time
}

// ProjectInvitation asks an existing user to join a project with a role.
type ProjectInvitation struct {
	ID          uuid.UUID
	ProjectID   uuid.UUID
	ProjectName string
	UserID      uuid.UUID
	Email       string
	Role        ProjectRole
	InvitedBy   *uuid.UUID
	CreatedAt   time.Time
}

// Membership is a user's role in one project, as a request's principal carries it.
type Membership struct {
	Role     ProjectRole
	Personal bool
}

// Projects are the ids of the projects where p holds at least min: those of the token's project
// alone when the token is limited to one.
func (p Principal) Projects(min ProjectRole) []uuid.UUID {
	var out []uuid.UUID
	for id, m := range p.Memberships {
		if m.Role.AtLeast(min) && (p.TokenProject == nil || *p.TokenProject == id) {
			out = append(out, id)
		}
	}
	slices.SortFunc(out, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	return out
}

// Listed are the projects a list reads for p: project alone when it names one (p must be in
// it, else it is not found), every one of p's otherwise.
func (p Principal) Listed(project *uuid.UUID) ([]uuid.UUID, error) {
	if project == nil {
		return p.Projects(ProjectViewer), nil
	}
	if err := p.Need(*project, ProjectViewer); err != nil {
		return nil, err
	}
	return []uuid.UUID{*project}, nil
}

// Need is nil when p holds min in project; otherwise a project p is not in (or one outside
// the token's) is not found, as if it were not there, and one where p's role is less is
// forbidden, naming the role it takes.
func (p Principal) Need(project uuid.UUID, min ProjectRole) error {
	m, ok := p.Memberships[project]
	if !ok || (p.TokenProject != nil && *p.TokenProject != project) {
		return Errorf(ErrNotFound, "project not found")
	}
	if !m.Role.AtLeast(min) {
		return Errorf(ErrForbidden, "this takes the %s role in its project; you are %s %s there", min, m.Role.article(), m.Role)
	}
	return nil
}

// ObjectKind names a kind of object a project holds, for ProjectFinder.
type ObjectKind string

// The kinds of object found by their id alone.
const (
	KindTest   ObjectKind = "test"
	KindScript ObjectKind = "script"
	KindRun    ObjectKind = "run"
	KindTarget ObjectKind = "target"
	KindAgent  ObjectKind = "agent"
	// KindChannel is a notification channel.
	KindChannel ObjectKind = "notification channel"
	// KindSchedule is a test's schedule.
	KindSchedule ObjectKind = "schedule"
)

// ProjectFinder finds the project an object is in, whoever asks (*postgres.Store): for a
// refusal that names the role it takes, never to read the object.
type ProjectFinder interface {
	ProjectOf(ctx context.Context, kind ObjectKind, id uuid.UUID) (uuid.UUID, error)
}

// Denied explains a change that found nothing among the projects where p holds min: when the
// object (of kind, id) is in a project p is a member of, p lacks the role, and the answer is
// forbidden, naming it; otherwise it stays not found. Other errors pass as they are.
func (p Principal) Denied(ctx context.Context, err error, min ProjectRole, f ProjectFinder, kind ObjectKind, id uuid.UUID) error {
	if !errors.Is(err, ErrNotFound) {
		return err
	}
	project, lookErr := f.ProjectOf(ctx, kind, id)
	if lookErr != nil {
		return err
	}
	if need := p.Need(project, min); need != nil && errors.Is(need, ErrForbidden) {
		return need
	}
	return err
}

// HomeProject is where what p makes goes when the request names no project: the token's project,
// else p's personal one.
func (p Principal) HomeProject() (uuid.UUID, error) {
	if p.TokenProject != nil {
		return *p.TokenProject, nil
	}
	for id, m := range p.Memberships {
		if m.Personal {
			return id, nil
		}
	}
	return uuid.Nil, Errorf(ErrNotFound, "you have no personal project")
}

// ProjectFor is the project a request names (nil: p's home project) where p holds at least min.
func (p Principal) ProjectFor(named *uuid.UUID, min ProjectRole) (uuid.UUID, error) {
	id := named
	if id == nil {
		home, err := p.HomeProject()
		if err != nil {
			return uuid.Nil, err
		}
		id = &home
	}
	return *id, p.Need(*id, min)
}
