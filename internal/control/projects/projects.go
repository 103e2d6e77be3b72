// Package projects keeps what a team shares: projects, their members and roles, and the
// invitations that bring existing users in. Everything a project holds (tests, scripts, runs,
// private agents, targets, secrets) is read and changed through the other services, each
// within the projects the caller belongs to and with the role the change takes
// (barrage.Principal.Projects, Need, Denied). Licenses stay personal: a project gives nobody more
// than their own.
package projects

import (
	"context"
	"errors"
	"log/slog"
	"net/mail"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/audit"
	"github.com/barrage-load/barrage/internal/barrage"
)

// Store is what projects keep in PostgreSQL (*postgres.Store).
type Store interface {
	CreateProject(ctx context.Context, id uuid.UUID, name string, creator uuid.UUID, max int) (barrage.Project, error)
	Projects(ctx context.Context, user uuid.UUID) ([]barrage.Project, error)
	Project(ctx context.Context, user, id uuid.UUID) (barrage.Project, []barrage.ProjectMember, error)
	RenameProject(ctx context.Context, id uuid.UUID, name string) error
	DeleteProject(ctx context.Context, id uuid.UUID) error
	SetMemberRole(ctx context.Context, project, user uuid.UUID, role barrage.ProjectRole) (int64, error)
	InviteToProject(ctx context.Context, inv barrage.ProjectInvitation) (barrage.ProjectInvitation, error)
	ProjectInvitations(ctx context.Context, project, user *uuid.UUID) ([]barrage.ProjectInvitation, error)
	TakeProjectInvitation(ctx context.Context, id uuid.UUID, project, user *uuid.UUID, accept bool) (barrage.ProjectInvitation, error)
	UserIDByEmail(ctx context.Context, email string) (uuid.UUID, error)
	Throttle(ctx context.Context, key string, r barrage.Rate, cost float64, now time.Time) error
}

// InviteRate bounds the invitations one user sends: each tells whether an email has an account
// (422 when none has), so they are few enough that nobody lists the accounts by them.
var InviteRate = barrage.Rate{N: 30, Per: time.Hour}

// MaxProjects bounds the projects one user may make to share (their personal one aside).
const MaxProjects = 50

// Service manages projects.
type Service struct {
	store Store
	log   *slog.Logger
}

// New returns the projects on store.
func New(store Store, log *slog.Logger) *Service { return &Service{store: store, log: log} }

// Projects lists p's projects, the personal one first. A token limited to a project lists it
// alone.
func (s *Service) Projects(ctx context.Context, p barrage.Principal) ([]barrage.Project, error) {
	all, err := s.store.Projects(ctx, p.User.ID)
	if err != nil || p.TokenProject == nil {
		return all, err
	}
	out := all[:0]
	for _, pr := range all {
		if pr.ID == *p.TokenProject {
			out = append(out, pr)
		}
	}
	return out, nil
}

// CreateProject makes a project named name with p as its owner.
func (s *Service) CreateProject(ctx context.Context, p barrage.Principal, name string) (barrage.Project, error) {
	name, err := barrage.CheckText("name", name, 1, 100)
	if err != nil {
		return barrage.Project{}, err
	}
	if p.TokenProject != nil {
		return barrage.Project{}, barrage.Errorf(barrage.ErrForbidden, "this token is limited to one project: make projects with a session or an unlimited token")
	}
	pr, err := s.store.CreateProject(ctx, uuid.Must(uuid.NewV7()), name, p.User.ID, MaxProjects)
	if err == nil {
		audit.Object(ctx, pr.ID.String())
		audit.Detail(ctx, "name", pr.Name)
	}
	return pr, err
}

// Project reads project id, which p is a member of, with its members.
func (s *Service) Project(ctx context.Context, p barrage.Principal, id uuid.UUID) (barrage.Project, []barrage.ProjectMember, error) {
	if err := p.Need(id, barrage.ProjectViewer); err != nil {
		return barrage.Project{}, nil, err
	}
	return s.store.Project(ctx, p.User.ID, id)
}

// RenameProject names project id anew (p an owner of it).
func (s *Service) RenameProject(ctx context.Context, p barrage.Principal, id uuid.UUID, name string) (barrage.Project, error) {
	if err := p.Need(id, barrage.ProjectOwner); err != nil {
		return barrage.Project{}, err
	}
	name, err := barrage.CheckText("name", name, 1, 100)
	if err != nil {
		return barrage.Project{}, err
	}
	if err := s.store.RenameProject(ctx, id, name); err != nil {
		return barrage.Project{}, err
	}
	audit.Detail(ctx, "name", name)
	pr, _, err := s.store.Project(ctx, p.User.ID, id)
	return pr, err
}

// DeleteProject deletes project id (p an owner of it) with all it holds.
func (s *Service) DeleteProject(ctx context.Context, p barrage.Principal, id uuid.UUID) error {
	if err := p.Need(id, barrage.ProjectOwner); err != nil {
		return err
	}
	if err := s.store.DeleteProject(ctx, id); err != nil {
		return err
	}
	s.log.InfoContext(ctx, "project deleted", slog.String("project_id", id.String()))
	return nil
}

// SetRole gives member user of project id the role (p an owner of it). The last owner stays one.
func (s *Service) SetRole(ctx context.Context, p barrage.Principal, id, user uuid.UUID, role barrage.ProjectRole) error {
	if err := p.Need(id, barrage.ProjectOwner); err != nil {
		return err
	}
	if !role.Valid() {
		return barrage.Invalid("role", "must be owner, editor, runner or viewer")
	}
	audit.Subject(ctx, user)
	audit.Detail(ctx, "role", role)
	return s.changeMember(ctx, id, user, role)
}

// changeMember gives user of project id the role ("": removes them), and says what it retired.
func (s *Service) changeMember(ctx context.Context, id, user uuid.UUID, role barrage.ProjectRole) error {
	retired, err := s.store.SetMemberRole(ctx, id, user, role)
	if retired > 0 {
		audit.Detail(ctx, "agents_retired", retired)
		s.log.InfoContext(ctx, "agents of a member who may no longer manage them retired", slog.String("project_id", id.String()),
			slog.Int64("agents", retired))
	}
	return err
}

// RemoveMember removes user from project id: an owner removes anyone, any member themselves.
// The last owner stays; what the member made stays in the project.
func (s *Service) RemoveMember(ctx context.Context, p barrage.Principal, id, user uuid.UUID) error {
	need := barrage.ProjectOwner
	if user == p.User.ID {
		need = barrage.ProjectViewer // leaving
	}
	if err := p.Need(id, need); err != nil {
		return err
	}
	if m, ok := p.Memberships[id]; ok && m.Personal && user == p.User.ID {
		return barrage.Errorf(barrage.ErrConflict, "your personal project is yours for as long as your account is there: you cannot leave it")
	}
	audit.Subject(ctx, user)
	return s.changeMember(ctx, id, user, "")
}

// InviteInput names whom to invite, by email or by id, and with which role.
type InviteInput struct {
	Email  string
	UserID *uuid.UUID
	Role   barrage.ProjectRole
}

// Invite asks an existing user to join project id with a role (p an owner of it).
func (s *Service) Invite(ctx context.Context, p barrage.Principal, id uuid.UUID, in InviteInput) (barrage.ProjectInvitation, error) {
	if err := p.Need(id, barrage.ProjectOwner); err != nil {
		return barrage.ProjectInvitation{}, err
	}
	if !in.Role.Valid() {
		return barrage.ProjectInvitation{}, barrage.Invalid("role", "must be owner, editor, runner or viewer")
	}
	if err := s.store.Throttle(ctx, "project-invite:"+p.User.ID.String(), InviteRate, 1, time.Now()); err != nil {
		return barrage.ProjectInvitation{}, err
	}
	var user uuid.UUID
	switch email := strings.TrimSpace(in.Email); {
	case (email == "") == (in.UserID == nil):
		return barrage.ProjectInvitation{}, barrage.Invalid("email", "name the user by email or by user_id: one of them")
	case in.UserID != nil:
		user = *in.UserID
	default:
		if a, err := mail.ParseAddress(email); err != nil || a.Address != email {
			return barrage.ProjectInvitation{}, barrage.Invalid("email", "must be an email address such as ada@example.com")
		}
		var err error
		if user, err = s.store.UserIDByEmail(ctx, email); errors.Is(err, barrage.ErrNotFound) {
			return barrage.ProjectInvitation{}, barrage.Invalid("email", "no account has this email: people sign up with an invitation code from an admin first")
		} else if err != nil {
			return barrage.ProjectInvitation{}, err
		}
	}
	pr, members, err := s.store.Project(ctx, p.User.ID, id)
	if err != nil {
		return barrage.ProjectInvitation{}, err
	}
	if pr.Personal {
		return barrage.ProjectInvitation{}, barrage.Errorf(barrage.ErrConflict, "a personal project is its user's alone: make a project to share (POST /v1/projects)")
	}
	for _, m := range members {
		if m.UserID == user {
			return barrage.ProjectInvitation{}, barrage.Errorf(barrage.ErrConflict, "%s is a member of the project already", m.Email)
		}
	}
	inv, err := s.store.InviteToProject(ctx, barrage.ProjectInvitation{ID: uuid.Must(uuid.NewV7()), ProjectID: id, UserID: user,
		Role: in.Role, InvitedBy: &p.User.ID})
	if errors.Is(err, barrage.ErrNotFound) && in.UserID != nil {
		return barrage.ProjectInvitation{}, barrage.Invalid("user_id", "no account has this id")
	}
	if err != nil {
		return barrage.ProjectInvitation{}, err
	}
	audit.Object(ctx, id.String())
	audit.Subject(ctx, user)
	audit.Detail(ctx, "role", in.Role)
	return inv, nil
}

// Invitations lists the invitations project id has sent that wait for an answer (p an owner).
func (s *Service) Invitations(ctx context.Context, p barrage.Principal, id uuid.UUID) ([]barrage.ProjectInvitation, error) {
	if err := p.Need(id, barrage.ProjectOwner); err != nil {
		return nil, err
	}
	return s.store.ProjectInvitations(ctx, &id, nil)
}

// Withdraw withdraws invitation inv of project id (p an owner).
func (s *Service) Withdraw(ctx context.Context, p barrage.Principal, id, inv uuid.UUID) error {
	if err := p.Need(id, barrage.ProjectOwner); err != nil {
		return err
	}
	taken, err := s.store.TakeProjectInvitation(ctx, inv, &id, nil, false)
	if err == nil {
		audit.Subject(ctx, taken.UserID)
	}
	return err
}

// MyInvitations lists the invitations to projects that wait for p's answer; a token limited to
// a project reads none (it may not answer them).
func (s *Service) MyInvitations(ctx context.Context, p barrage.Principal) ([]barrage.ProjectInvitation, error) {
	if p.TokenProject != nil {
		return []barrage.ProjectInvitation{}, nil
	}
	return s.store.ProjectInvitations(ctx, nil, &p.User.ID)
}

// Answer accepts or declines invitation id to p; an accepted one makes p a member with its
// role, and returns the project.
func (s *Service) Answer(ctx context.Context, p barrage.Principal, id uuid.UUID, accept bool) (barrage.Project, error) {
	if p.TokenProject != nil {
		return barrage.Project{}, barrage.Errorf(barrage.ErrForbidden, "this token is limited to one project: answer invitations with a session or an unlimited token")
	}
	inv, err := s.store.TakeProjectInvitation(ctx, id, nil, &p.User.ID, accept)
	if err != nil {
		return barrage.Project{}, err
	}
	audit.Object(ctx, inv.ProjectID.String())
	audit.Detail(ctx, "role", inv.Role)
	if !accept {
		return barrage.Project{}, nil
	}
	pr, _, err := s.store.Project(ctx, p.User.ID, inv.ProjectID)
	return pr, err
}
