package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/api"
)

func runTargets(ctx context.Context, e env, args []string) error {
	sub := map[string]func(context.Context, env, []string) error{
		"list": runTargetsList, "add": runTargetsAdd, "verify": runTargetsVerify, "delete": runTargetsDelete,
	}
	return dispatch(ctx, e, "targets", sub, args)
}

func runTargetsList(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "targets list", "[--project P]")
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
	return printTable(e, "ID\tURL\tVERIFIED\tADDRESS\tCHECKED\tWHY NOT",
		func(*string) ([]api.Target, *string, error) {
			res, err := cl.ListTargetsWithResponse(ctx, &api.ListTargetsParams{Project: project})
			if err != nil {
				return nil, nil, err
			}
			if res.JSON200 == nil {
				return nil, nil, api.ProblemError(res.HTTPResponse, res.Body)
			}
			return res.JSON200.Targets, nil, nil
		},
		func(t api.Target) string {
			checked := "never"
			if t.CheckedAt != nil {
				checked = t.CheckedAt.Format(time.RFC3339)
			}
			addr := "-"
			if t.Address != nil {
				addr = *t.Address
			}
			verified := fmt.Sprint(t.Verified)
			if t.Open {
				verified = "open" // the server opens it to everyone: no proof needed
			}
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", t.Id, t.Url, verified, addr, checked, t.CheckError)
		})
}

func runTargetsAdd(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "targets add", "URL (http(s)://host[:port]) [--project P]")
	inProj := projectFlag(fs)
	url, err := positionalArg(fs, args)
	if err != nil {
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
	res, err := cl.CreateTargetWithResponse(ctx, &api.CreateTargetParams{Project: project}, api.CreateTargetRequest{Url: url})
	if err != nil {
		return err
	}
	t := res.JSON201
	if t == nil {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	if t.Open {
		fmt.Fprintf(e.stderr, "Target %s registered (id %s). This server opens it to every user: runs need no proof for it.\n", t.Url, t.Id)
	} else {
		fmt.Fprintf(e.stderr, "Target %s registered (id %s). Shared agents load it once you prove you control it:\n"+
			"  serve this file, with the token %s as its whole body:\n    %s\n"+
			"then check it: barrage targets verify %s\n", t.Url, t.Id, t.Token, t.VerifyUrl, t.Id)
	}
	fmt.Fprintln(e.stdout, t.Id)
	return nil
}

// errNotVerified is a check that did not prove control (exit status 1, its reason printed).
var errNotVerified = errors.New("not verified")

func runTargetsVerify(ctx context.Context, e env, args []string) error {
	return byID(ctx, e, args, "targets verify", "target", func(cl *api.ClientWithResponses, id uuid.UUID) error {
		res, err := cl.VerifyTargetWithResponse(ctx, id)
		if err != nil {
			return err
		}
		t := res.JSON200
		if t == nil {
			return api.ProblemError(res.HTTPResponse, res.Body)
		}
		if !t.Verified {
			return fmt.Errorf("%w: %s: %s", errNotVerified, t.Url, t.CheckError)
		}
		fmt.Fprintf(e.stdout, "%s verified at %s: shared agents load that address for it\n", t.Url, deref(t.Address))
		return nil
	})
}

func runTargetsDelete(ctx context.Context, e env, args []string) error {
	return byID(ctx, e, args, "targets delete", "target", func(cl *api.ClientWithResponses, id uuid.UUID) error {
		res, err := cl.DeleteTargetWithResponse(ctx, id)
		if err != nil {
			return err
		}
		if res.StatusCode() != 204 {
			return api.ProblemError(res.HTTPResponse, res.Body)
		}
		fmt.Fprintln(e.stderr, "Target removed.")
		return nil
	})
}
