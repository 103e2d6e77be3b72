package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/barrage-load/barrage/api"
)

func runSecrets(ctx context.Context, e env, args []string) error {
	sub := map[string]func(context.Context, env, []string) error{
		"list": runSecretsList, "set": runSecretsSet, "delete": runSecretsDelete,
	}
	return dispatch(ctx, e, "secrets", sub, args)
}

func runSecretsList(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "secrets list", "[--project P]")
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
	return printTable(e, "NAME\tSET\tCREATED",
		func(*string) ([]api.Secret, *string, error) {
			res, err := cl.ListSecretsWithResponse(ctx, &api.ListSecretsParams{Project: project})
			if err != nil {
				return nil, nil, err
			}
			if res.JSON200 == nil {
				return nil, nil, api.ProblemError(res.HTTPResponse, res.Body)
			}
			return res.JSON200.Items, nil, nil
		},
		func(s api.Secret) string {
			return fmt.Sprintf("%s\t%s\t%s", s.Name, s.UpdatedAt.Format(time.RFC3339), s.CreatedAt.Format(time.RFC3339))
		})
}

// runSecretsSet sets a secret to a value read without echo from a terminal, else one line of
// stdin: never from the command line, where the shell's history and ps would keep it.
func runSecretsSet(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "secrets set", "NAME [--project P]  (the value on stdin, or prompted without echo)")
	inProj := projectFlag(fs)
	name, err := positionalArg(fs, args)
	if err != nil {
		return err
	}
	value, err := readPassword(e, "Value of "+name+": ")
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
	res, err := cl.PutSecretWithResponse(ctx, &api.PutSecretParams{Project: project}, api.PutSecretRequest{Name: name, Value: &value})
	if err != nil {
		return err
	}
	switch res.StatusCode() {
	case http.StatusCreated:
		fmt.Fprintf(e.stderr, "Secret %s set: scripts read it as ${secret.%s}.\n", name, name)
	case http.StatusOK:
		fmt.Fprintf(e.stderr, "Secret %s replaced.\n", name)
	default:
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	return nil
}

func runSecretsDelete(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "secrets delete", "NAME [--project P]")
	inProj := projectFlag(fs)
	name, err := positionalArg(fs, args)
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
	res, err := cl.DeleteSecretWithResponse(ctx, name, &api.DeleteSecretParams{Project: project})
	if err != nil {
		return err
	}
	if res.StatusCode() != http.StatusNoContent {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	fmt.Fprintf(e.stderr, "Secret %s deleted.\n", name)
	return nil
}
