package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/api"
)

func runTokens(ctx context.Context, e env, args []string) error {
	sub := map[string]func(context.Context, env, []string) error{
		"create": runTokensCreate, "list": runTokensList, "delete": runTokensDelete,
	}
	return dispatch(ctx, e, "tokens", sub, args)
}

// dispatch runs the subcommand args[0] of group.
func dispatch(ctx context.Context, e env, group string, sub map[string]func(context.Context, env, []string) error, args []string) error {
	if len(args) > 0 {
		if f, ok := sub[args[0]]; ok {
			return f(ctx, e, args[1:])
		}
	}
	fmt.Fprintf(e.stderr, "Usage: barrage %s <%s> [flags]\n", group, strings.Join(slices.Sorted(maps.Keys(sub)), "|"))
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		return flag.ErrHelp // asked for
	}
	return errUsage
}

func runTokensCreate(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "tokens create", "--name NAME [--scopes read,write] [--expires-in-days 90] [--project P]")
	name := fs.String("name", "", "token name, unique among your tokens")
	scopes := fs.String("scopes", "read,write", "comma-separated scopes: read, write, admin")
	expires := fs.Int("expires-in-days", 90, "days until the token expires (1 to 365)")
	project := fs.String("project", "", "limit the token to this project of yours (an id or a name): it reaches nothing else")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	body := api.CreateTokenJSONRequestBody{Name: *name, ExpiresInDays: expires}
	if *project != "" {
		if body.ProjectId, err = findProject(ctx, cl, *project); err != nil {
			return err
		}
	}
	for _, s := range strings.Split(*scopes, ",") {
		if s = strings.TrimSpace(s); s != "" {
			body.Scopes = append(body.Scopes, api.Scope(s))
		}
	}
	res, err := cl.CreateTokenWithResponse(ctx, body)
	if err != nil {
		return err
	}
	if res.JSON201 == nil {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	t := res.JSON201
	fmt.Fprintf(e.stderr, "Token %q created (id %s), expires %s. It is shown once; keep it secret:\n", t.Name, t.Id, t.ExpiresAt.Format(time.RFC3339))
	fmt.Fprintln(e.stdout, t.Token)
	return nil
}

func runTokensList(ctx context.Context, e env, args []string) error {
	if err := parseFlags(newFlags(e, "tokens list", ""), args, 0); err != nil {
		return err
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	return printTable(e, tokenHeader, tokenPages(ctx, cl), tokenRow)
}

const tokenHeader = "ID\tNAME\tSCOPES\tEXPIRES\tLAST USED"

// tokenPages fetches your personal API tokens a page at a time.
func tokenPages(ctx context.Context, cl *api.ClientWithResponses) func(cursor *string) ([]api.APIToken, *string, error) {
	return func(cursor *string) ([]api.APIToken, *string, error) {
		res, err := cl.ListTokensWithResponse(ctx, &api.ListTokensParams{Cursor: cursor})
		if err != nil {
			return nil, nil, err
		}
		if res.JSON200 == nil {
			return nil, nil, api.ProblemError(res.HTTPResponse, res.Body)
		}
		return res.JSON200.Items, res.JSON200.NextCursor, nil
	}
}

// tokenRow is a token's row in tokenHeader's columns.
func tokenRow(t api.APIToken) string {
	scopes := make([]string, len(t.Scopes))
	for i, s := range t.Scopes {
		scopes[i] = string(s)
	}
	last := "never"
	if t.LastUsedAt != nil {
		last = t.LastUsedAt.Format(time.RFC3339)
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s", t.Id, t.Name, strings.Join(scopes, ","), t.ExpiresAt.Format(time.RFC3339), last)
}

// printTable prints a list as a table, every page of it: the header, then a row per item.
func printTable[T any](e env, header string, fetch func(cursor *string) ([]T, *string, error), row func(T) string) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	var cursor *string
	for {
		items, next, err := fetch(cursor)
		if err != nil {
			return err
		}
		for _, it := range items {
			fmt.Fprintln(tw, row(it))
		}
		if cursor = next; cursor == nil {
			return tw.Flush()
		}
	}
}

func runTokensDelete(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "tokens delete", "ID")
	if err := parseFlags(fs, args, 1); err != nil {
		return err
	}
	id, err := uuid.Parse(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("%q is not a token id", fs.Arg(0))
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	res, err := cl.DeleteTokenWithResponse(ctx, id)
	if err != nil {
		return err
	}
	if res.StatusCode() != 204 {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	fmt.Fprintln(e.stdout, "Token deleted.")
	return nil
}
