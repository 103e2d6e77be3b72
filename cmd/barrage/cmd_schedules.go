package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/api"
)

func runSchedules(ctx context.Context, e env, args []string) error {
	sub := map[string]func(context.Context, env, []string) error{
		"create": runSchedulesCreate, "list": runSchedulesList, "show": runSchedulesShow, "pause": runSchedulesPause,
		"resume": runSchedulesResume, "delete": runSchedulesDelete, "firings": runSchedulesFirings,
	}
	return dispatch(ctx, e, "schedules", sub, args)
}

func runSchedulesCreate(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "schedules create", "TEST_ID (--cron EXPR [--tz ZONE] | --every D) [--revision N] [--name N] [--agent ID]... [--agents N] [--vus N --duration D --rate R] [-e NAME=VALUE]...")
	cronExpr := fs.String("cron", "", `a cron expression: five fields ("0 2 * * 1-5": 02:00 on weekdays), or @hourly, @daily, @weekly, @monthly`)
	tz := fs.String("tz", "", "the IANA time zone the cron expression is read in (default UTC)")
	every := fs.String("every", "", "in place of --cron: fire every so long (30m, 6h)")
	name := fs.String("name", "", "the schedule's name (default the test's)")
	revision := fs.Int("revision", 0, "the test's revision each firing runs (default its latest at each firing)")
	agents := fs.Int("agents", 0, "how many idle online agents each run takes (default 1)")
	var agentIDs multiFlag
	fs.Var(&agentIDs, "agent", "run on this agent (repeat for several)")
	lf := addLoadFlags(fs)
	envs := addEnvFlag(fs)
	id, err := idArg(fs, args, "test")
	if err != nil {
		return err
	}
	if (*cronExpr == "") == (*every == "") {
		return usageError(errors.New("give --cron EXPR or --every D, one of them"))
	}
	load, err := lf.overrides()
	if err != nil {
		return err
	}
	body := api.ScheduleInput{}
	for _, f := range []struct {
		v   string
		dst **string
	}{{*cronExpr, &body.Cron}, {*tz, &body.TimeZone}, {*every, &body.Every}, {*name, &body.Name}} {
		if f.v != "" {
			*f.dst = ptr(f.v)
		}
	}
	if *agents > 0 {
		body.Agents = agents
	}
	if *revision > 0 {
		body.Revision = revision
	}
	for _, a := range agentIDs {
		u, err := uuid.Parse(a)
		if err != nil {
			return usageError(fmt.Errorf("--agent %q: %w", a, err))
		}
		if body.AgentIds == nil {
			body.AgentIds = &[]uuid.UUID{}
		}
		*body.AgentIds = append(*body.AgentIds, u)
	}
	if l := api.LoadOf(load); l != (api.LoadOverrides{}) {
		body.Load = &l
	}
	if len(*envs) > 0 {
		body.Env = ptr(api.RunEnv(*envs))
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	res, err := cl.CreateScheduleWithResponse(ctx, id, body)
	if err != nil {
		return err
	}
	sc := res.JSON201
	if sc == nil {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	fmt.Fprintf(e.stderr, "Schedule %q (%s, %s) runs test %s; next at %s.\n", sc.Name, sc.Cron, sc.TimeZone, sc.TestId, nextText(sc.Next))
	fmt.Fprintln(e.stdout, sc.Id)
	return nil
}

func nextText(next []time.Time) string {
	if len(next) == 0 {
		return "never (paused)"
	}
	return next[0].Local().Format(time.RFC3339)
}

func runSchedulesList(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "schedules list", "[--test ID] [--project P]")
	inProj := projectFlag(fs)
	testFlag := fs.String("test", "", "only this test's schedules")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	var test *uuid.UUID
	if *testFlag != "" {
		u, err := uuid.Parse(*testFlag)
		if err != nil {
			return usageError(fmt.Errorf("--test %q: %w", *testFlag, err))
		}
		test = &u
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	project, err := inProj.id(ctx, e, cl)
	if err != nil {
		return err
	}
	return printTable(e, "ID\tNAME\tTEST\tWHEN\tNEXT\tSTATE",
		func(cursor *string) ([]api.Schedule, *string, error) {
			res, err := cl.ListSchedulesWithResponse(ctx, &api.ListSchedulesParams{Project: project, TestId: test, Cursor: cursor})
			if err != nil {
				return nil, nil, err
			}
			if res.JSON200 == nil {
				return nil, nil, api.ProblemError(res.HTTPResponse, res.Body)
			}
			return res.JSON200.Items, res.JSON200.NextCursor, nil
		},
		func(sc api.Schedule) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s (%s)\t%s\t%s", sc.Id, sc.Name, sc.TestId, sc.Cron, sc.TimeZone, nextText(sc.Next), scheduleState(sc))
		})
}

func scheduleState(sc api.Schedule) string {
	if sc.Paused {
		return "PAUSED: " + sc.PausedReason
	}
	return "active"
}

func runSchedulesShow(ctx context.Context, e env, args []string) error {
	return byID(ctx, e, args, "schedules show", "schedule", func(cl *api.ClientWithResponses, id uuid.UUID) error {
		res, err := cl.GetScheduleWithResponse(ctx, id)
		if err != nil {
			return err
		}
		sc := res.JSON200
		if sc == nil {
			return api.ProblemError(res.HTTPResponse, res.Body)
		}
		next := make([]string, len(sc.Next))
		for i, t := range sc.Next {
			next[i] = t.Local().Format(time.RFC3339)
		}
		rev := "latest"
		if sc.Revision > 0 {
			rev = fmt.Sprint(sc.Revision)
		}
		fmt.Fprintf(e.stdout, "schedule %s %q\ntest:   %s (revision: %s)\nwhen:   %s (%s)\nstate:  %s\nnext:   %s\n", sc.Id, sc.Name, sc.TestId, rev,
			sc.Cron, sc.TimeZone, scheduleState(*sc), strings.Join(next, ", "))
		return printFirings(ctx, e, cl, id)
	})
}

func runSchedulesFirings(ctx context.Context, e env, args []string) error {
	return byID(ctx, e, args, "schedules firings", "schedule", func(cl *api.ClientWithResponses, id uuid.UUID) error {
		return printFirings(ctx, e, cl, id)
	})
}

// printFirings prints a schedule's newest firings: the run each started, or why it started none.
func printFirings(ctx context.Context, e env, cl *api.ClientWithResponses, id uuid.UUID) error {
	return printTable(e, "DUE\tRUN\tWHY NOT",
		func(*string) ([]api.Firing, *string, error) {
			res, err := cl.ListScheduleFiringsWithResponse(ctx, id)
			if err != nil {
				return nil, nil, err
			}
			if res.JSON200 == nil {
				return nil, nil, api.ProblemError(res.HTTPResponse, res.Body)
			}
			return res.JSON200.Items, nil, nil
		},
		func(f api.Firing) string {
			run := "-"
			if f.RunId != nil {
				run = f.RunId.String()
			} else if f.Error == "" {
				run = "(starting)"
			}
			return fmt.Sprintf("%s\t%s\t%s", f.DueAt.Local().Format(time.RFC3339), run, f.Error)
		})
}

func runSchedulesPause(ctx context.Context, e env, args []string) error {
	return setSchedulePaused(ctx, e, args, "pause", true)
}

func runSchedulesResume(ctx context.Context, e env, args []string) error {
	return setSchedulePaused(ctx, e, args, "resume", false)
}

func setSchedulePaused(ctx context.Context, e env, args []string, verb string, paused bool) error {
	return byID(ctx, e, args, "schedules "+verb, "schedule", func(cl *api.ClientWithResponses, id uuid.UUID) error {
		res, err := cl.UpdateScheduleWithResponse(ctx, id, api.ScheduleUpdate{Paused: paused})
		if err != nil {
			return err
		}
		if res.JSON200 == nil {
			return api.ProblemError(res.HTTPResponse, res.Body)
		}
		fmt.Fprintf(e.stderr, "Schedule %q: %s; next at %s.\n", res.JSON200.Name, scheduleState(*res.JSON200), nextText(res.JSON200.Next))
		return nil
	})
}

func runSchedulesDelete(ctx context.Context, e env, args []string) error {
	return byID(ctx, e, args, "schedules delete", "schedule", func(cl *api.ClientWithResponses, id uuid.UUID) error {
		res, err := cl.DeleteScheduleWithResponse(ctx, id)
		if err != nil {
			return err
		}
		if res.StatusCode() != 204 {
			return api.ProblemError(res.HTTPResponse, res.Body)
		}
		fmt.Fprintln(e.stderr, "Schedule deleted, with its firings; its runs stay.")
		return nil
	})
}
