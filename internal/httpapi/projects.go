package httpapi

import (
	"context"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control/projects"
)

func (s *server) ListProjects(ctx context.Context, _ api.ListProjectsRequestObject) (api.ListProjectsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	list, err := s.projects.Projects(ctx, p)
	if err != nil {
		return nil, err
	}
	out := api.ListProjects200JSONResponse{Items: make([]api.Project, len(list))}
	for i, pr := range list {
		out.Items[i] = toAPIProject(pr)
	}
	return out, nil
}

func (s *server) CreateProject(ctx context.Context, req api.CreateProjectRequestObject) (api.CreateProjectResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	pr, err := s.projects.CreateProject(ctx, p, req.Body.Name)
	if err != nil {
		return nil, err
	}
	return api.CreateProject201JSONResponse(toAPIProject(pr)), nil
}

func (s *server) GetProject(ctx context.Context, req api.GetProjectRequestObject) (api.GetProjectResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	pr, members, err := s.projects.Project(ctx, p, req.Id)
	if err != nil {
		return nil, err
	}
	return api.GetProject200JSONResponse(toAPIProjectDetail(pr, members)), nil
}

func (s *server) UpdateProject(ctx context.Context, req api.UpdateProjectRequestObject) (api.UpdateProjectResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	pr, err := s.projects.RenameProject(ctx, p, req.Id, req.Body.Name)
	if err != nil {
		return nil, err
	}
	return api.UpdateProject200JSONResponse(toAPIProject(pr)), nil
}

func (s *server) DeleteProject(ctx context.Context, req api.DeleteProjectRequestObject) (api.DeleteProjectResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.projects.DeleteProject(ctx, p, req.Id); err != nil {
		return nil, err
	}
	return api.DeleteProject204Response{}, nil
}

func (s *server) SetProjectMemberRole(ctx context.Context, req api.SetProjectMemberRoleRequestObject) (api.SetProjectMemberRoleResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.projects.SetRole(ctx, p, req.Id, req.UserId, barrage.ProjectRole(req.Body.Role)); err != nil {
		return nil, err
	}
	pr, members, err := s.projects.Project(ctx, p, req.Id)
	if err != nil {
		return nil, err
	}
	return api.SetProjectMemberRole200JSONResponse(toAPIProjectDetail(pr, members)), nil
}

func (s *server) RemoveProjectMember(ctx context.Context, req api.RemoveProjectMemberRequestObject) (api.RemoveProjectMemberResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.projects.RemoveMember(ctx, p, req.Id, req.UserId); err != nil {
		return nil, err
	}
	return api.RemoveProjectMember204Response{}, nil
}

func (s *server) ListProjectInvitations(ctx context.Context, req api.ListProjectInvitationsRequestObject) (api.ListProjectInvitationsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	list, err := s.projects.Invitations(ctx, p, req.Id)
	if err != nil {
		return nil, err
	}
	return api.ListProjectInvitations200JSONResponse(toAPIProjectInvitations(list)), nil
}

func (s *server) InviteToProject(ctx context.Context, req api.InviteToProjectRequestObject) (api.InviteToProjectResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	inv, err := s.projects.Invite(ctx, p, req.Id, projects.InviteInput{Email: deref(b.Email), UserID: b.UserId, Role: barrage.ProjectRole(b.Role)})
	if err != nil {
		return nil, err
	}
	return api.InviteToProject201JSONResponse(toAPIProjectInvitation(inv)), nil
}

func (s *server) WithdrawProjectInvitation(ctx context.Context, req api.WithdrawProjectInvitationRequestObject) (api.WithdrawProjectInvitationResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.projects.Withdraw(ctx, p, req.Id, req.InvitationId); err != nil {
		return nil, err
	}
	return api.WithdrawProjectInvitation204Response{}, nil
}

func (s *server) ListMyProjectInvitations(ctx context.Context, _ api.ListMyProjectInvitationsRequestObject) (api.ListMyProjectInvitationsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	list, err := s.projects.MyInvitations(ctx, p)
	if err != nil {
		return nil, err
	}
	return api.ListMyProjectInvitations200JSONResponse(toAPIProjectInvitations(list)), nil
}

func (s *server) AcceptProjectInvitation(ctx context.Context, req api.AcceptProjectInvitationRequestObject) (api.AcceptProjectInvitationResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	pr, err := s.projects.Answer(ctx, p, req.Id, true)
	if err != nil {
		return nil, err
	}
	return api.AcceptProjectInvitation200JSONResponse(toAPIProject(pr)), nil
}

func (s *server) DeclineProjectInvitation(ctx context.Context, req api.DeclineProjectInvitationRequestObject) (api.DeclineProjectInvitationResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := s.projects.Answer(ctx, p, req.Id, false); err != nil {
		return nil, err
	}
	return api.DeclineProjectInvitation204Response{}, nil
}

func toAPIProject(p barrage.Project) api.Project {
	return api.Project{Id: p.ID, Name: p.Name, Personal: p.Personal, Role: api.ProjectRole(p.Role), Members: p.Members, CreatedAt: p.CreatedAt}
}

func toAPIProjectDetail(p barrage.Project, members []barrage.ProjectMember) api.ProjectDetail {
	out := api.ProjectDetail{Id: p.ID, Name: p.Name, Personal: p.Personal, Role: api.ProjectRole(p.Role), Members: p.Members, CreatedAt: p.CreatedAt,
		MemberList: make([]api.ProjectMember, len(members))}
	for i, m := range members {
		out.MemberList[i] = api.ProjectMember{UserId: m.UserID, Email: m.Email, Name: m.Name, Role: api.ProjectRole(m.Role), AddedAt: m.AddedAt}
	}
	return out
}

func toAPIProjectInvitation(i barrage.ProjectInvitation) api.ProjectInvitation {
	return api.ProjectInvitation{Id: i.ID, ProjectId: i.ProjectID, ProjectName: i.ProjectName, UserId: i.UserID, Email: i.Email,
		Role: api.ProjectRole(i.Role), InvitedBy: i.InvitedBy, CreatedAt: i.CreatedAt}
}

func toAPIProjectInvitations(list []barrage.ProjectInvitation) api.ProjectInvitationList {
	out := api.ProjectInvitationList{Items: make([]api.ProjectInvitation, len(list))}
	for i, inv := range list {
		out.Items[i] = toAPIProjectInvitation(inv)
	}
	return out
}
