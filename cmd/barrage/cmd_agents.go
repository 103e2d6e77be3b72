package main

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/api"
)

func runAgents(ctx context.Context, e env, args []string) error {
	sub := map[string]func(context.Context, env, []string) error{
		"list": runAgentsList, "create": runAgentsCreate, "delete": runAgentsDelete, "ping": runAgentsPing,
	}
	return dispatch(ctx, e, "agents", sub, args)
}

func runAgentsList(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "agents list", "[--project P]")
	inProj := projectFlag(fs)
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	project, err := inProj.id(ctx, e, cl)
	if err != nil {
		return err
	}
	return printTable(e, "ID\tNAME\tKIND\tSTATE\tVERSION\tCORES\tMAX VUS\tMAX TIME\tLAST SEEN",
		func(*string) ([]api.Agent, *string, error) {
			res, err := cl.ListAgentsWithResponse(ctx, &api.ListAgentsParams{Project: project})
			if err != nil {
				return nil, nil, err
			}
			if res.JSON200 == nil {
				return nil, nil, api.ProblemError(res.HTTPResponse, res.Body)
			}
			return res.JSON200.Items, nil, nil
		},
		func(a api.Agent) string {
			kind, seen, vus, secs := "private", "never", "-", "-"
			if a.Shared {
				kind = "shared"
			}
			if a.LastSeenAt != nil {
				seen = a.LastSeenAt.Format(time.RFC3339)
			}
			if a.MaxVus != nil {
				vus = fmt.Sprint(*a.MaxVus)
			}
			if a.MaxRunDurationSeconds != nil {
				secs = (time.Duration(*a.MaxRunDurationSeconds) * time.Second).String()
			}
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s", a.Id, a.Name, kind, a.State, a.Version, a.Cores, vus, secs, seen)
		})
}

func runAgentsCreate(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "agents create", "NAME [--max-vus N] [--max-duration D] [--project P | --shared]")
	inProj := projectFlag(fs)
	maxVUs := fs.Int("max-vus", 0, "the agent's own limit of VUs per job (0: none)")
	maxDuration := durationFlag(fs, "max-duration", 0, "the agent's own limit of time per job (0: none)")
	shared := fs.Bool("shared", false, "register a shared agent that every user may run on (admins)")
	name, err := positionalArg(fs, args)
	if err != nil {
		return err
	}
	cl, c, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	body := api.CreateAgentRequest{Name: name}
	if *maxVUs > 0 {
		body.MaxVus = maxVUs
	}
	if *maxDuration > 0 {
		body.MaxRunDurationSeconds = ptr(int(maxDuration.Seconds()))
	}
	var a *api.CreatedAgent
	if *shared {
		res, err := cl.CreateSharedAgentWithResponse(ctx, body)
		if err != nil {
			return err
		}
		if a = res.JSON201; a == nil {
			return api.ProblemError(res.HTTPResponse, res.Body)
		}
	} else {
		project, err := inProj.id(ctx, e, cl)
		if err != nil {
			return err
		}
		res, err := cl.CreateAgentWithResponse(ctx, &api.CreateAgentParams{Project: project}, body)
		if err != nil {
			return err
		}
		if a = res.JSON201; a == nil {
			return api.ProblemError(res.HTTPResponse, res.Body)
		}
	}
	fmt.Fprintf(e.stderr, "Agent %q registered (id %s). Its token is shown once; start it with\n"+
		"  BARRAGE_AGENT_TOKEN=<token> barrage agent --server %s\n"+
		"It refuses loopback and private addresses unless allowed: add --allow-target HOST:PORT (or a CIDR) for\n"+
		"a target on this network, such as --allow-target 127.0.0.1:8081 for the demo shop.\n", a.Name, a.Id, c.Server)
	if *shared {
		fmt.Fprintln(e.stderr, "A shared agent loads only targets their runs' owners proved they control (barrage targets add),\n"+
			"and those the server opens to everyone (serve --open-targets).")
	}
	fmt.Fprintln(e.stdout, a.Token)
	return nil
}

func runAgentsDelete(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "agents delete", "ID [--shared]")
	shared := fs.Bool("shared", false, "remove a shared agent (admins)")
	id, err := idArg(fs, args, "agent")
	if err != nil {
		return err
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	var status int
	var body []byte
	if *shared {
		res, err := cl.DeleteSharedAgentWithResponse(ctx, id)
		if err != nil {
			return err
		}
		status, body = res.StatusCode(), res.Body
		if status != 204 {
			return api.ProblemError(res.HTTPResponse, body)
		}
	} else {
		res, err := cl.DeleteAgentWithResponse(ctx, id)
		if err != nil {
			return err
		}
		if res.StatusCode() != 204 {
			return api.ProblemError(res.HTTPResponse, res.Body)
		}
	}
	fmt.Fprintln(e.stderr, "Agent removed.")
	return nil
}

func runAgentsPing(ctx context.Context, e env, args []string) error {
	return byID(ctx, e, args, "agents ping", "agent", func(cl *api.ClientWithResponses, id uuid.UUID) error {
		res, err := cl.PingAgentWithResponse(ctx, id)
		if err != nil {
			return err
		}
		if res.JSON200 == nil {
			return api.ProblemError(res.HTTPResponse, res.Body)
		}
		fmt.Fprintf(e.stdout, "agent %s (%s, version %s): round trip %.1f ms\n", id, res.JSON200.State, res.JSON200.Version, res.JSON200.RoundTripMs)
		return nil
	})
}
