package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/api"
)

func runTests(ctx context.Context, e env, args []string) error {
	sub := map[string]func(context.Context, env, []string) error{
		"push": runTestsPush, "list": runTestsList, "show": runTestsShow, "debug": runTestsDebug, "delete": runTestsDelete,
		"baseline": runTestsBaseline, "trend": runTestsTrend,
	}
	return dispatch(ctx, e, "tests", sub, args)
}

// runTestsPush saves a script file as a test: a new test, or the next revision of the test of
// that name (or --id), with the data files the script names uploaded from beside it.
func runTestsPush(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "tests push", "FILE [--name NAME | --id ID] [--project P]")
	name := fs.String("name", "", "the test's name (default: the script's); a test of that name in the project gets a new revision")
	inProj := projectFlag(fs)
	idFlag := fs.String("id", "", "save as the next revision of this test")
	path, err := positionalArg(fs, args)
	if err != nil {
		return err
	}
	s, err := loadScript(e, path) // checked here first: the errors point at the local file
	if err != nil {
		return err
	}
	source, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	if *name == "" {
		*name = s.Name
	}
	project, err := inProj.id(ctx, e, cl)
	if err != nil {
		return err
	}
	id := *idFlag
	if id == "" {
		if id, err = testByName(ctx, cl, project, *name); err != nil {
			return err
		}
	}
	ct := "application/yaml"
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".json" {
		ct = "application/json"
	}
	var t *api.Test
	if id == "" {
		res, err := cl.CreateTestWithBodyWithResponse(ctx, &api.CreateTestParams{Name: name, Project: project}, ct, bytes.NewReader(source))
		if err != nil {
			return err
		}
		if t = res.JSON201; t == nil {
			return api.ProblemError(res.HTTPResponse, res.Body)
		}
	} else {
		tid, err := uuid.Parse(id)
		if err != nil {
			return usageError(fmt.Errorf("test id %q: %w", id, err))
		}
		res, err := cl.UpdateTestWithBodyWithResponse(ctx, tid, &api.UpdateTestParams{Name: name}, ct, bytes.NewReader(source))
		if err != nil {
			return err
		}
		if t = res.JSON200; t == nil {
			return api.ProblemError(res.HTTPResponse, res.Body)
		}
	}
	err = eachScriptFile(path, s, func(name string, data []byte) error {
		res, err := cl.PutTestFileWithBodyWithResponse(ctx, t.Id, name, "application/octet-stream", bytes.NewReader(data))
		if err != nil {
			return err
		}
		if res.JSON200 == nil && res.JSON201 == nil {
			return fmt.Errorf("upload %s: %w", name, api.ProblemError(res.HTTPResponse, res.Body))
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "Test %q saved as revision %d.\n", t.Name, t.LatestRevision)
	fmt.Fprintln(e.stdout, t.Id)
	return nil
}

// testByName returns the id of the newest of the tests named name in project (nil: in any of
// the user's projects), or "" when none is.
func testByName(ctx context.Context, cl *api.ClientWithResponses, project *uuid.UUID, name string) (string, error) {
	var cursor *string
	for {
		res, err := cl.ListTestsWithResponse(ctx, &api.ListTestsParams{Cursor: cursor, Project: project})
		if err != nil {
			return "", err
		}
		if res.JSON200 == nil {
			return "", api.ProblemError(res.HTTPResponse, res.Body)
		}
		for _, t := range res.JSON200.Items {
			if t.Name == name {
				return t.Id.String(), nil
			}
		}
		if cursor = res.JSON200.NextCursor; cursor == nil {
			return "", nil
		}
	}
}

func runTestsList(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "tests list", "[--project P]")
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
	return printTable(e, "ID\tNAME\tREVISION\tFILES\tUPDATED",
		func(cursor *string) ([]api.Test, *string, error) {
			res, err := cl.ListTestsWithResponse(ctx, &api.ListTestsParams{Cursor: cursor, Project: project})
			if err != nil {
				return nil, nil, err
			}
			if res.JSON200 == nil {
				return nil, nil, api.ProblemError(res.HTTPResponse, res.Body)
			}
			return res.JSON200.Items, res.JSON200.NextCursor, nil
		},
		func(t api.Test) string {
			return fmt.Sprintf("%s\t%s\t%d\t%d\t%s", t.Id, t.Name, t.LatestRevision, len(t.Files), t.UpdatedAt.Format(time.RFC3339))
		})
}

func runTestsShow(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "tests show", "ID [--revision N]")
	rev := fs.Int("revision", 0, "show this revision's source (default: the latest)")
	id, err := idArg(fs, args, "test")
	if err != nil {
		return err
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	res, err := cl.GetTestWithResponse(ctx, id)
	if err != nil {
		return err
	}
	t := res.JSON200
	if t == nil {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	if *rev == 0 {
		*rev = t.LatestRevision
	}
	rr, err := cl.GetTestRevisionWithResponse(ctx, id, *rev)
	if err != nil {
		return err
	}
	if rr.JSON200 == nil {
		return api.ProblemError(rr.HTTPResponse, rr.Body)
	}
	r := rr.JSON200
	fmt.Fprintf(e.stderr, "test %s %q, revision %d of %d (%s, saved %s)\n", t.Id, t.Name, r.Revision, t.LatestRevision, r.Format, r.CreatedAt.Format(time.RFC3339))
	tw := tabwriter.NewWriter(e.stderr, 0, 4, 2, ' ', 0)
	for _, f := range t.Files {
		fmt.Fprintf(tw, "file %s\t%d bytes\tsha256 %s\n", f.Name, f.Size, shortSum(f.Sha256))
	}
	tw.Flush()
	if b := t.Baseline; b != nil {
		fmt.Fprintf(e.stderr, "baseline: run %s %s\n", b.RunId, tolerancesText(b))
	}
	if r.Source != nil {
		fmt.Fprint(e.stdout, *r.Source)
	}
	return nil
}

func runTestsDelete(ctx context.Context, e env, args []string) error {
	return byID(ctx, e, args, "tests delete", "test", func(cl *api.ClientWithResponses, id uuid.UUID) error {
		res, err := cl.DeleteTestWithResponse(ctx, id)
		if err != nil {
			return err
		}
		if res.StatusCode() != http.StatusNoContent {
			return api.ProblemError(res.HTTPResponse, res.Body)
		}
		fmt.Fprintf(e.stderr, "Test %s deleted; its scripts and runs stay.\n", id)
		return nil
	})
}

// jobFlags are the flags of a job on an agent: which revision, which agent.
type jobFlags struct {
	rev   *int
	agent *string
}

func addJobFlags(fs *flag.FlagSet) jobFlags {
	return jobFlags{
		rev:   fs.Int("revision", 0, "the test's revision (default: the latest)"),
		agent: fs.String("agent", "", "the agent to do it on (default: the first online one you may use)"),
	}
}

func (j jobFlags) request() (api.TestJobRequest, error) {
	var req api.TestJobRequest
	switch {
	case *j.rev < 0:
		return req, fmt.Errorf("--revision %d: want a revision number", *j.rev)
	case *j.rev > 0:
		req.Revision = j.rev
	}
	if *j.agent != "" {
		a, err := uuid.Parse(*j.agent)
		if err != nil {
			return req, fmt.Errorf("--agent %q: %w", *j.agent, err)
		}
		req.AgentId = &a
	}
	return req, nil
}

// jobClient is an API client that waits as long as a job on an agent may take.
func jobClient(ctx context.Context, e env) (*api.ClientWithResponses, error) {
	cl, _, err := apiClientWith(ctx, e, true, &http.Client{Timeout: 70 * time.Second})
	return cl, err
}

// runTestsDebug runs one traced iteration of a test on an agent and prints it as `barrage
// debug` does; it fails when a request failed.
func runTestsDebug(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "tests debug", "ID [--revision N] [--agent ID]")
	jf := addJobFlags(fs)
	preview := fs.Int("preview", 2048, "bytes of each body to show (the agent sends at most 4096)")
	id, err := idArg(fs, args, "test")
	if err != nil {
		return err
	}
	req, err := jf.request()
	if err != nil {
		return err
	}
	cl, err := jobClient(ctx, e)
	if err != nil {
		return err
	}
	res, err := cl.DebugTestWithResponse(ctx, id, req)
	if err != nil {
		return err
	}
	d := res.JSON200
	if d == nil {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	fmt.Fprintf(e.stderr, "revision %d on agent %s\n\n", d.Revision, d.AgentId)
	for _, r := range d.Requests {
		printTrace(e.stdout, r.Event(), *preview)
	}
	switch {
	case d.Error != nil:
		return errors.New(*d.Error)
	case !d.Passed:
		return errors.New("a request failed")
	}
	fmt.Fprintln(e.stdout, "every request passed its checks")
	return nil
}

func runScripts(ctx context.Context, e env, args []string) error {
	return dispatch(ctx, e, "scripts", map[string]func(context.Context, env, []string) error{"generate": runScriptsGenerate}, args)
}

// runScriptsGenerate generates a test's script (on an agent when the test has plugins) and
// prints its id.
func runScriptsGenerate(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "scripts generate", "TEST_ID [--revision N] [--agent ID]")
	jf := addJobFlags(fs)
	id, err := idArg(fs, args, "test")
	if err != nil {
		return err
	}
	req, err := jf.request()
	if err != nil {
		return err
	}
	cl, err := jobClient(ctx, e)
	if err != nil {
		return err
	}
	sc, err := generateScript(ctx, cl, id, req)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "Script %s: revision %d of test %s, sha256 %s\n", sc.Id, deref(sc.TestRevision), id, sc.Sha256)
	printPins(e, sc.Plugins)
	fmt.Fprintln(e.stdout, sc.Id)
	return nil
}

func generateScript(ctx context.Context, cl *api.ClientWithResponses, id uuid.UUID, req api.TestJobRequest) (*api.Script, error) {
	res, err := cl.GenerateScriptWithResponse(ctx, id, req)
	if err != nil {
		return nil, err
	}
	if res.JSON201 == nil {
		return nil, api.ProblemError(res.HTTPResponse, res.Body)
	}
	return res.JSON201, nil
}

// printPins says which plugin each alias runs, pinned by what: the binary's sha256 on the
// agent, or, for a marketplace plugin, its signed SHA256SUMS and the key that signed them.
func printPins(e env, pins []api.PluginPin) {
	for _, p := range pins {
		if p.Source != nil && *p.Source == api.Marketplace {
			fmt.Fprintf(e.stderr, "  plugin %s %s@%s (%s) from the marketplace: SHA256SUMS sha256 %s, signed by key %s\n",
				p.Alias, p.Name, p.Version, p.Kind, p.Sha256, deref(p.SignerId))
			continue
		}
		fmt.Fprintf(e.stderr, "  plugin %s %s@%s (%s) sha256 %s\n", p.Alias, p.Name, p.Version, p.Kind, p.Sha256)
	}
}
