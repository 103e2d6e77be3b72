package postgres

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/postgres/dbsqlc"
)

// Memberships reads the projects user belongs to, with the role held in each.
func (s *Store) Memberships(ctx context.Context, user uuid.UUID) (map[uuid.UUID]barrage.Membership, error) {
	rows, err := s.q.ProjectMemberships(ctx, s.pool, user)
	if err != nil {
		return nil, translate(err, "projects")
	}
	out := make(map[uuid.UUID]barrage.Membership, len(rows))
	for _, r := range rows {
		out[r.ProjectID] = barrage.Membership{Role: barrage.ProjectRole(r.Role), Personal: r.Personal}
	}
	return out, nil
}

// CreateProject stores a new project with its creator as its owner, unless the creator owns max
// projects to share already (ErrLimitExceeded): counted under the creator's lock, so that
// projects made at once cannot pass it.
func (s *Store) CreateProject(ctx context.Context, id uuid.UUID, name string, creator uuid.UUID, max int) (barrage.Project, error) {
	var p barrage.Project
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := s.q.UserGetByIDForUpdate(ctx, tx, creator); err != nil {
			return err
		}
		n, err := s.q.ProjectsOwnedShared(ctx, tx, creator)
		if err != nil {
			return err
		}
		if n >= int64(max) {
			return barrage.Errorf(barrage.ErrLimitExceeded, "you own %d projects, the most one may: delete one first", n)
		}
		row, err := s.q.ProjectInsert(ctx, tx, dbsqlc.ProjectInsertParams{ID: id, Name: name, CreatedBy: &creator})
		if err != nil {
			return err
		}
		p = barrage.Project{ID: row.ID, Name: row.Name, Role: barrage.ProjectOwner, Members: 1, CreatedAt: row.CreatedAt}
		return s.q.ProjectMemberInsert(ctx, tx, dbsqlc.ProjectMemberInsertParams{
			ProjectID: id, UserID: creator, Role: string(barrage.ProjectOwner), AddedBy: &creator})
	})
	return p, translate(err, "project")
}

// Projects lists user's projects, the personal one first, then by name.
func (s *Store) Projects(ctx context.Context, user uuid.UUID) ([]barrage.Project, error) {
	rows, err := s.q.ProjectList(ctx, s.pool, user)
	if err != nil {
		return nil, translate(err, "projects")
	}
	out := make([]barrage.Project, len(rows))
	for i, r := range rows {
		out[i] = barrage.Project{ID: r.ID, Name: r.Name, Personal: r.PersonalOf != nil, Role: barrage.ProjectRole(r.Role),
			Members: int(r.Members), CreatedAt: r.CreatedAt}
	}
	return out, nil
}

// Project reads project id as its member user sees it, with its members; a project user is not
// in is not found.
func (s *Store) Project(ctx context.Context, user, id uuid.UUID) (barrage.Project, []barrage.ProjectMember, error) {
	r, err := s.q.ProjectGet(ctx, s.pool, dbsqlc.ProjectGetParams{ID: id, UserID: user})
	if err != nil {
		return barrage.Project{}, nil, translate(err, "project")
	}
	p := barrage.Project{ID: r.ID, Name: r.Name, Personal: r.PersonalOf != nil, Role: barrage.ProjectRole(r.Role),
		Members: int(r.Members), CreatedAt: r.CreatedAt}
	rows, err := s.q.ProjectMembers(ctx, s.pool, id)
	if err != nil {
		return barrage.Project{}, nil, translate(err, "project members")
	}
	members := make([]barrage.ProjectMember, len(rows))
	for i, m := range rows {
		members[i] = barrage.ProjectMember{UserID: m.UserID, Email: m.Email, Name: m.Name, Role: barrage.ProjectRole(m.Role), AddedAt: m.AddedAt}
	}
	return p, members, nil
}

// RenameProject names project id anew.
func (s *Store) RenameProject(ctx context.Context, id uuid.UUID, name string) error {
	return translate(s.q.ProjectRename(ctx, s.pool, dbsqlc.ProjectRenameParams{ID: id, Name: name}), "project")
}

// DeleteProject deletes project id with everything it holds, unless it is someone's personal
// project or a run of it has not ended (ErrConflict, saying which).
func (s *Store) DeleteProject(ctx context.Context, id uuid.UUID) error {
	return translate(s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := s.q.ProjectLock(ctx, tx, id); err != nil {
			return err
		}
		active, err := s.q.ProjectActiveRuns(ctx, tx, id)
		if err != nil {
			return err
		}
		if active > 0 {
			return barrage.Errorf(barrage.ErrConflict, "%d runs of the project have not ended: cancel them first", active)
		}
		n, err := s.q.ProjectDelete(ctx, tx, id)
		if err == nil && n == 0 {
			err = barrage.Errorf(barrage.ErrConflict, "a personal project is its user's for as long as the account is there: it cannot be deleted")
		}
		return err
	}), "project")
}

// SetMemberRole gives member user of project the role, or with role "" removes them. The last
// owner stays (ErrConflict): a project always has one; the user of a personal project stays its
// owner. A member who is no owner any more has the invitations they sent withdrawn; one who is
// no editor any more has the private agents they registered in the project retired (their
// machine would go on receiving its runs and secrets): it returns how many.
func (s *Store) SetMemberRole(ctx context.Context, project, user uuid.UUID, role barrage.ProjectRole) (retired int64, err error) {
	err = translate(s.inTx(ctx, func(tx pgx.Tx) error {
		personal, err := s.q.ProjectLock(ctx, tx, project)
		if err != nil {
			return err
		}
		if personal != nil && *personal == user && role != barrage.ProjectOwner {
			return barrage.Errorf(barrage.ErrConflict, "a personal project's user stays its owner")
		}
		was, err := s.q.ProjectMemberRole(ctx, tx, dbsqlc.ProjectMemberRoleParams{ProjectID: project, UserID: user})
		if errors.Is(err, pgx.ErrNoRows) {
			return barrage.Errorf(barrage.ErrNotFound, "no such member")
		}
		if err != nil {
			return err
		}
		if was == string(barrage.ProjectOwner) && role != barrage.ProjectOwner {
			owners, err := s.q.ProjectOwnerCount(ctx, tx, project)
			if err != nil {
				return err
			}
			if owners <= 1 {
				return barrage.Errorf(barrage.ErrConflict, "the project's last owner stays: make another member an owner first")
			}
		}
		if role == "" {
			_, err = s.q.ProjectMemberDelete(ctx, tx, dbsqlc.ProjectMemberDeleteParams{ProjectID: project, UserID: user})
		} else {
			_, err = s.q.ProjectMemberSetRole(ctx, tx, dbsqlc.ProjectMemberSetRoleParams{ProjectID: project, UserID: user, Role: string(role)})
		}
		if err != nil {
			return err
		}
		if !role.AtLeast(barrage.ProjectOwner) {
			if _, err := s.q.ProjectInvitationsOfInviterDelete(ctx, tx, dbsqlc.ProjectInvitationsOfInviterDeleteParams{ProjectID: project, UserID: &user}); err != nil {
				return err
			}
		}
		if !role.AtLeast(barrage.ProjectEditor) {
			retired, err = s.q.ProjectAgentsOfMemberDelete(ctx, tx, dbsqlc.ProjectAgentsOfMemberDeleteParams{ProjectID: &project, UserID: &user})
		}
		return err
	}), "project member")
	return retired, err
}

// InviteToProject asks user to join project with role, one invitation a user and project, and
// returns it with the project's name and the invitee's email.
func (s *Store) InviteToProject(ctx context.Context, inv barrage.ProjectInvitation) (barrage.ProjectInvitation, error) {
	r, err := s.q.ProjectInvitationInsert(ctx, s.pool, dbsqlc.ProjectInvitationInsertParams{
		ID: inv.ID, ProjectID: inv.ProjectID, UserID: inv.UserID, Role: string(inv.Role), InvitedBy: inv.InvitedBy})
	if err != nil {
		return barrage.ProjectInvitation{}, translate(err, "an invitation of this user to the project")
	}
	return projectInvitationFromRow(dbsqlc.ProjectInvitationsRow(r)), nil
}

func projectInvitationFromRow(r dbsqlc.ProjectInvitationsRow) barrage.ProjectInvitation {
	return barrage.ProjectInvitation{ID: r.ID, ProjectID: r.ProjectID, ProjectName: r.ProjectName, UserID: r.UserID, Email: r.Email,
		Role: barrage.ProjectRole(r.Role), InvitedBy: r.InvitedBy, CreatedAt: r.CreatedAt}
}

// ProjectInvitations lists the invitations of a project (project given) or to a user (user
// given), oldest first.
func (s *Store) ProjectInvitations(ctx context.Context, project, user *uuid.UUID) ([]barrage.ProjectInvitation, error) {
	rows, err := s.q.ProjectInvitations(ctx, s.pool, dbsqlc.ProjectInvitationsParams{ProjectID: project, UserID: user})
	if err != nil {
		return nil, translate(err, "project invitations")
	}
	out := make([]barrage.ProjectInvitation, len(rows))
	for i, r := range rows {
		out[i] = projectInvitationFromRow(r)
	}
	return out, nil
}

// TakeProjectInvitation removes invitation id, of project or to user (whichever is given), and
// with accept makes its invitee a member with its role, all at once.
func (s *Store) TakeProjectInvitation(ctx context.Context, id uuid.UUID, project, user *uuid.UUID, accept bool) (barrage.ProjectInvitation, error) {
	var inv barrage.ProjectInvitation
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		r, err := s.q.ProjectInvitationTake(ctx, tx, dbsqlc.ProjectInvitationTakeParams{ID: id, ProjectID: project, UserID: user})
		if err != nil {
			return err
		}
		inv = barrage.ProjectInvitation{ID: r.ID, ProjectID: r.ProjectID, UserID: r.UserID, Role: barrage.ProjectRole(r.Role),
			InvitedBy: r.InvitedBy, CreatedAt: r.CreatedAt}
		if !accept {
			return nil
		}
		err = s.q.ProjectMemberInsert(ctx, tx, dbsqlc.ProjectMemberInsertParams{ProjectID: r.ProjectID, UserID: r.UserID, Role: r.Role, AddedBy: r.InvitedBy})
		if errors.Is(translate(err, ""), barrage.ErrConflict) {
			return barrage.Errorf(barrage.ErrConflict, "you are a member of the project already")
		}
		return err
	})
	return inv, translate(err, "invitation")
}

// UserIDByEmail finds the account with email, case aside.
func (s *Store) UserIDByEmail(ctx context.Context, email string) (uuid.UUID, error) {
	id, err := s.q.UserIDByEmail(ctx, s.pool, email)
	return id, translate(err, "user")
}

// ProjectOf finds the project of the object of kind with id, whoever asks: for a refusal that
// names the role it takes (barrage.Principal.Denied), never to read the object.
func (s *Store) ProjectOf(ctx context.Context, kind barrage.ObjectKind, id uuid.UUID) (uuid.UUID, error) {
	var project uuid.UUID
	var err error
	switch kind {
	case barrage.KindTest:
		project, err = s.q.ProjectOfTest(ctx, s.pool, id)
	case barrage.KindScript:
		project, err = s.q.ProjectOfScript(ctx, s.pool, id)
	case barrage.KindRun:
		project, err = s.q.ProjectOfRun(ctx, s.pool, id)
	case barrage.KindTarget:
		project, err = s.q.ProjectOfTarget(ctx, s.pool, id)
	case barrage.KindAgent:
		project, err = s.q.ProjectOfAgent(ctx, s.pool, id)
	case barrage.KindChannel:
		project, err = s.q.ProjectOfNotificationChannel(ctx, s.pool, id)
	case barrage.KindSchedule:
		project, err = s.q.ProjectOfSchedule(ctx, s.pool, id)
	default:
		return uuid.Nil, barrage.Errorf(barrage.ErrNotFound, "no kind of object %q", kind)
	}
	return project, translate(err, string(kind))
}
