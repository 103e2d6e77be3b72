package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/api"
)

func runProjects(ctx context.Context, e env, args []string) error {
	sub := map[string]func(context.Context, env, []string) error{
		"list": runProjectsList, "create": runProjectsCreate, "show": runProjectsShow, "use": runProjectsUse,
		"invite": runProjectsInvite, "invitations": runProjectsInvitations, "accept": runProjectsAnswer(true),
		"decline": runProjectsAnswer(false), "role": runProjectsRole, "remove": runProjectsRemove, "delete": runProjectsDelete,
	}
	return dispatch(ctx, e, "projects", sub, args)
}

// inProject is the --project flag of a command that works in one project.
type inProject struct{ name *string }

// projectFlag adds --project to fs.
func projectFlag(fs *flag.FlagSet) inProject {
	return inProject{name: fs.String("project", "", "the project, by id or name (default: BARRAGE_PROJECT, else the one barrage projects use chose, "+
		"else your personal project, or the one your token is limited to)")}
}

// id is the project the flag names, else BARRAGE_PROJECT, else the stored default; nil when none
// is named (the server then takes the caller's home project, and a list every project). A name
// is looked up among the caller's projects.
func (f inProject) id(ctx context.Context, e env, cl *api.ClientWithResponses) (*uuid.UUID, error) {
	name := strings.TrimSpace(*f.name)
	if name == "" {
		name = e.getenv("BARRAGE_PROJECT")
	}
	if name == "" {
		c, err := loadCredentials(e)
		if err != nil {
			return nil, err
		}
		name = c.Project
	}
	if name == "" {
		return nil, nil
	}
	return findProject(ctx, cl, name)
}

// named is the project the flag names, nil when it names none: a filter, which no default sets.
func (f inProject) named(ctx context.Context, cl *api.ClientWithResponses) (*uuid.UUID, error) {
	if name := strings.TrimSpace(*f.name); name != "" {
		return findProject(ctx, cl, name)
	}
	return nil, nil
}

// findProject is the id of the caller's project named by id or name (case aside).
func findProject(ctx context.Context, cl *api.ClientWithResponses, name string) (*uuid.UUID, error) {
	if id, err := uuid.Parse(name); err == nil {
		return &id, nil
	}
	res, err := cl.ListProjectsWithResponse(ctx)
	if err != nil {
		return nil, err
	}
	if res.JSON200 == nil {
		return nil, api.ProblemError(res.HTTPResponse, res.Body)
	}
	var found []api.Project
	for _, p := range res.JSON200.Items {
		if strings.EqualFold(p.Name, name) {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("you have no project named %q: `barrage projects list` shows yours", name)
	case 1:
		return &found[0].Id, nil
	}
	return nil, fmt.Errorf("%d of your projects are named %q: name one by its id (`barrage projects list`)", len(found), name)
}

// article is "an" before a word that starts with a vowel, else "a".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

// projectArg reads the command's one positional argument, a project, and returns its id.
func projectArg(ctx context.Context, e env, fs *flag.FlagSet, args []string) (*api.ClientWithResponses, uuid.UUID, error) {
	name, err := positionalArg(fs, args)
	if err != nil {
		return nil, uuid.Nil, err
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return nil, uuid.Nil, err
	}
	id, err := findProject(ctx, cl, name)
	if err != nil {
		return nil, uuid.Nil, err
	}
	return cl, *id, nil
}

func runProjectsList(ctx context.Context, e env, args []string) error {
	if err := parseFlags(newFlags(e, "projects list", ""), args, 0); err != nil {
		return err
	}
	cl, c, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	def := c.Project
	return printTable(e, "ID\tNAME\tROLE\tMEMBERS\tDEFAULT", func(*string) ([]api.Project, *string, error) {
		res, err := cl.ListProjectsWithResponse(ctx)
		if err != nil {
			return nil, nil, err
		}
		if res.JSON200 == nil {
			return nil, nil, api.ProblemError(res.HTTPResponse, res.Body)
		}
		return res.JSON200.Items, nil, nil
	}, func(p api.Project) string {
		name := p.Name
		if p.Personal {
			name += " (personal)"
		}
		mark := ""
		if def == p.Id.String() || strings.EqualFold(def, p.Name) {
			mark = "*"
		}
		return terminalText(fmt.Sprintf("%s\t%s\t%s\t%d\t%s", p.Id, name, p.Role, p.Members, mark))
	})
}

func runProjectsCreate(ctx context.Context, e env, args []string) error {
	name, err := positionalArg(newFlags(e, "projects create", "NAME"), args)
	if err != nil {
		return err
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	res, err := cl.CreateProjectWithResponse(ctx, api.ProjectInput{Name: name})
	if err != nil {
		return err
	}
	if res.JSON201 == nil {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	fmt.Fprintf(e.stdout, "Project %q created (id %s); you are its owner. Invite people with: barrage projects invite %s --email EMAIL --role editor\n",
		res.JSON201.Name, res.JSON201.Id, res.JSON201.Id)
	return nil
}

func runProjectsShow(ctx context.Context, e env, args []string) error {
	cl, id, err := projectArg(ctx, e, newFlags(e, "projects show", "PROJECT"), args)
	if err != nil {
		return err
	}
	res, err := cl.GetProjectWithResponse(ctx, id)
	if err != nil {
		return err
	}
	p := res.JSON200
	if p == nil {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	fmt.Fprintf(e.stdout, "%s (%s), you are %s %s\n", terminalText(p.Name), p.Id, article(string(p.Role)), p.Role)
	return printTable(e, "USER ID\tEMAIL\tNAME\tROLE\tSINCE", func(*string) ([]api.ProjectMember, *string, error) {
		return p.MemberList, nil, nil
	}, func(m api.ProjectMember) string {
		return terminalText(fmt.Sprintf("%s\t%s\t%s\t%s\t%s", m.UserId, m.Email, m.Name, m.Role, m.AddedAt.Format(time.RFC3339)))
	})
}

// runProjectsUse stores the project the commands work in when they name none.
func runProjectsUse(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "projects use", "PROJECT  (or --none: your personal project again)")
	none := fs.Bool("none", false, "forget the default: commands work in your personal project again")
	var name string
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	switch {
	case *none && fs.NArg() == 0:
	case !*none && fs.NArg() == 1:
		name = fs.Arg(0)
	default:
		fs.Usage()
		return errUsage
	}
	c, err := loadCredentials(e)
	if err != nil {
		return err
	}
	if name != "" {
		cl, _, err := apiClient(ctx, e, true)
		if err != nil {
			return err
		}
		id, err := findProject(ctx, cl, name)
		if err != nil {
			return err
		}
		if res, err := cl.GetProjectWithResponse(ctx, *id); err != nil {
			return err
		} else if res.JSON200 == nil {
			return api.ProblemError(res.HTTPResponse, res.Body)
		}
		name = id.String()
	}
	c.Project = name
	if err := saveCredentials(e, c); err != nil {
		return err
	}
	if name == "" {
		fmt.Fprintln(e.stdout, "Commands work in your personal project.")
	} else {
		fmt.Fprintf(e.stdout, "Commands work in project %s unless told otherwise (--project, BARRAGE_PROJECT).\n", name)
	}
	return nil
}

func runProjectsInvite(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "projects invite", "PROJECT (--email EMAIL | --user USER_ID) --role owner|editor|runner|viewer")
	email := fs.String("email", "", "the user's email")
	user := fs.String("user", "", "the user's id (barrage me shows it)")
	role := fs.String("role", "viewer", "owner, editor, runner or viewer")
	cl, id, err := projectArg(ctx, e, fs, args)
	if err != nil {
		return err
	}
	body := api.ProjectInvitationInput{Role: api.ProjectRole(*role), Email: nonEmpty(*email)}
	if *user != "" {
		u, err := uuid.Parse(*user)
		if err != nil {
			return fmt.Errorf("--user: %q is not a user id", *user)
		}
		body.UserId = &u
	}
	res, err := cl.InviteToProjectWithResponse(ctx, id, body)
	if err != nil {
		return err
	}
	if res.JSON201 == nil {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	fmt.Fprintf(e.stdout, "Invited %s as %s; they accept with: barrage projects accept %s\n", res.JSON201.Email, res.JSON201.Role, res.JSON201.Id)
	return nil
}

// runProjectsInvitations lists the invitations waiting for your answer, or with a project those
// it sent.
func runProjectsInvitations(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "projects invitations", "[PROJECT]  (without one: the invitations waiting for your answer)")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return errUsage
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	list, err := func() (*api.ProjectInvitationList, error) {
		if fs.NArg() == 0 {
			res, err := cl.ListMyProjectInvitationsWithResponse(ctx)
			if err != nil {
				return nil, err
			}
			if res.JSON200 == nil {
				return nil, api.ProblemError(res.HTTPResponse, res.Body)
			}
			return res.JSON200, nil
		}
		id, err := findProject(ctx, cl, fs.Arg(0))
		if err != nil {
			return nil, err
		}
		res, err := cl.ListProjectInvitationsWithResponse(ctx, *id)
		if err != nil {
			return nil, err
		}
		if res.JSON200 == nil {
			return nil, api.ProblemError(res.HTTPResponse, res.Body)
		}
		return res.JSON200, nil
	}()
	if err != nil {
		return err
	}
	return printTable(e, "ID\tPROJECT\tUSER\tROLE\tSENT", func(*string) ([]api.ProjectInvitation, *string, error) {
		return list.Items, nil, nil
	}, func(i api.ProjectInvitation) string {
		return terminalText(fmt.Sprintf("%s\t%s\t%s\t%s\t%s", i.Id, i.ProjectName, i.Email, i.Role, i.CreatedAt.Format(time.RFC3339)))
	})
}

func runProjectsAnswer(accept bool) func(context.Context, env, []string) error {
	verb := map[bool]string{true: "accept", false: "decline"}[accept]
	return func(ctx context.Context, e env, args []string) error {
		fs := newFlags(e, "projects "+verb, "INVITATION_ID")
		if err := parseFlags(fs, args, 1); err != nil {
			return err
		}
		id, err := uuid.Parse(fs.Arg(0))
		if err != nil {
			return fmt.Errorf("%q is not an invitation id (`barrage projects invitations` lists yours)", fs.Arg(0))
		}
		cl, _, err := apiClient(ctx, e, true)
		if err != nil {
			return err
		}
		if accept {
			res, err := cl.AcceptProjectInvitationWithResponse(ctx, id)
			if err != nil {
				return err
			}
			if res.JSON200 == nil {
				return api.ProblemError(res.HTTPResponse, res.Body)
			}
			fmt.Fprintf(e.stdout, "You are %s %s of %s (%s).\n", article(string(res.JSON200.Role)), res.JSON200.Role, terminalText(res.JSON200.Name), res.JSON200.Id)
			return nil
		}
		res, err := cl.DeclineProjectInvitationWithResponse(ctx, id)
		if err != nil {
			return err
		}
		if res.StatusCode() != http.StatusNoContent {
			return api.ProblemError(res.HTTPResponse, res.Body)
		}
		fmt.Fprintln(e.stdout, "Invitation declined.")
		return nil
	}
}

func runProjectsRole(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "projects role", "PROJECT --user USER_ID --role owner|editor|runner|viewer")
	role := fs.String("role", "", "owner, editor, runner or viewer")
	return memberCommand(ctx, e, fs, args, func(cl *api.ClientWithResponses, id, u uuid.UUID) (*http.Response, []byte, bool, error) {
		res, err := cl.SetProjectMemberRoleWithResponse(ctx, id, u, api.ProjectRoleInput{Role: api.ProjectRole(*role)})
		if err != nil {
			return nil, nil, false, err
		}
		return res.HTTPResponse, res.Body, res.JSON200 != nil, nil
	}, "Role changed.")
}

func runProjectsRemove(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "projects remove", "PROJECT --user USER_ID  (your own id: leave the project)")
	return memberCommand(ctx, e, fs, args, func(cl *api.ClientWithResponses, id, u uuid.UUID) (*http.Response, []byte, bool, error) {
		res, err := cl.RemoveProjectMemberWithResponse(ctx, id, u)
		if err != nil {
			return nil, nil, false, err
		}
		return res.HTTPResponse, res.Body, res.StatusCode() == http.StatusNoContent, nil
	}, "Removed; what they made stays in the project.")
}

// memberCommand runs a command on one member (--user) of the project its argument names: call
// says whether the server did it, and done is said when it did.
func memberCommand(ctx context.Context, e env, fs *flag.FlagSet, args []string,
	call func(cl *api.ClientWithResponses, project, user uuid.UUID) (*http.Response, []byte, bool, error), done string) error {
	user := fs.String("user", "", "the member's user id")
	cl, id, err := projectArg(ctx, e, fs, args)
	if err != nil {
		return err
	}
	u, err := uuid.Parse(*user)
	if err != nil {
		return fmt.Errorf("--user: %q is not a user id", *user)
	}
	res, body, ok, err := call(cl, id, u)
	if err != nil {
		return err
	}
	if !ok {
		return api.ProblemError(res, body)
	}
	fmt.Fprintln(e.stdout, done)
	return nil
}

func runProjectsDelete(ctx context.Context, e env, args []string) error {
	cl, id, err := projectArg(ctx, e, newFlags(e, "projects delete", "PROJECT  (its tests, scripts, runs, agents, targets and secrets go with it)"), args)
	if err != nil {
		return err
	}
	res, err := cl.DeleteProjectWithResponse(ctx, id)
	if err != nil {
		return err
	}
	if res.StatusCode() != http.StatusNoContent {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	fmt.Fprintln(e.stdout, "Project deleted, with all it held.")
	return nil
}
