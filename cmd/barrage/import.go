package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/har"
)

func runImport(ctx context.Context, e env, args []string) error {
	return dispatch(ctx, e, "import", map[string]func(context.Context, env, []string) error{"har": runImportHAR}, args)
}

// convertFlags are the flags `barrage import har` and `barrage record` share: both convert a
// HAR log with har.Convert and write the script the same way.
type convertFlags struct {
	out      *string
	assets   *bool
	idle     *time.Duration
	maxThink *time.Duration
	users    *string
	secrets  *multiFlag
}

func addConvertFlags(fs *flag.FlagSet) *convertFlags {
	secrets := &multiFlag{}
	fs.Var(secrets, "secret", "NAME: wherever the recording sent the value of BARRAGE_SECRET_NAME, the script reads ${secret.NAME}, and nothing printed shows it; repeatable "+
		"(the server does it with your secrets on --push)")
	return &convertFlags{secrets: secrets,
		out:      fs.String("o", "", "write the script to this file (YAML)"),
		assets:   fs.Bool("assets", false, "keep static assets (images, CSS, JavaScript, fonts, media), left out by default"),
		idle:     durationFlag(fs, "idle", har.DefaultIdle, "a pause between requests longer than this starts a new page (group)"),
		maxThink: durationFlag(fs, "max-think", har.DefaultMaxThink, "the longest think time taken from a pause between pages"),
		users: fs.String("users", "", "a CSV data file of users (a header line, then a row each), in the script's folder: "+
			"the values the recording typed in that are a row of it (a login's email and password) become that row's ${columns}"),
	}
}

// options checks the flags, reads the secrets from the environment, and reads the data file,
// named as the script will name it: relative to the script's folder, which must hold it.
func (f *convertFlags) options(e env) (har.Options, error) {
	opts := har.Options{Assets: *f.assets, Idle: *f.idle, MaxThink: *f.maxThink}
	if *f.idle <= 0 || *f.maxThink <= 0 {
		return opts, usageError(errors.New("--idle and --max-think must be above 0"))
	}
	for _, name := range *f.secrets {
		if err := barrage.CheckSecretName("--secret", name); err != nil {
			return opts, usageError(err)
		}
		v := e.getenv("BARRAGE_SECRET_" + name)
		if v == "" {
			return opts, usageError(fmt.Errorf("--secret %s: BARRAGE_SECRET_%s is not set: set it to the secret's value", name, name))
		}
		if err := barrage.CheckSecretValue("BARRAGE_SECRET_"+name, v); err != nil {
			return opts, usageError(fmt.Errorf("--secret %s: set BARRAGE_SECRET_%s to its value: %w", name, name, err))
		}
		if opts.Secrets == nil {
			opts.Secrets = map[string]string{}
		}
		opts.Secrets[name] = v
	}
	if *f.out != "" {
		if st, err := os.Stat(filepath.Dir(*f.out)); err != nil || !st.IsDir() {
			return opts, usageError(fmt.Errorf("-o %s: no folder %s to write it in", *f.out, filepath.Dir(*f.out)))
		}
	}
	if *f.users == "" {
		return opts, nil
	}
	dir := "."
	if *f.out != "" {
		dir = filepath.Dir(*f.out)
	}
	absDir, err1 := filepath.Abs(dir)
	absUsers, err2 := filepath.Abs(*f.users)
	rel, err3 := filepath.Rel(absDir, absUsers)
	if err := errors.Join(err1, err2, err3); err != nil {
		return opts, usageError(fmt.Errorf("--users %s: %w", *f.users, err))
	}
	if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return opts, usageError(fmt.Errorf("--users %s: a script reads its data files from its own folder; copy the file into %s", *f.users, absDir))
	}
	content, err := os.ReadFile(*f.users)
	if err != nil {
		return opts, usageError(fmt.Errorf("--users: %w", err))
	}
	d, err := har.ReadDataFile(filepath.ToSlash(rel), content)
	if err != nil {
		return opts, usageError(err)
	}
	opts.Data = d
	return opts, nil
}

// convert turns a HAR log into a script, writes it to -o (else stdout), and says on stderr what
// it found.
func (f *convertFlags) convert(e env, l *har.Log, opts har.Options) error {
	res, err := har.Convert(l, opts)
	if errors.Is(err, barrage.ErrInvalid) {
		return &exitError{code: exitScriptError, err: fmt.Errorf("nothing to convert: %s", fieldLines(err))}
	}
	if err != nil {
		return err
	}
	if *f.out == "" {
		_, err = e.stdout.Write(res.Script)
	} else {
		// 0600, as the HAR it came from: a script holds what the recording typed in.
		err = writePrivate(*f.out, res.Script)
	}
	if err != nil {
		return fmt.Errorf("write the script: %w", err)
	}
	res.WriteSummary(e.stderr)
	if *f.out != "" {
		fmt.Fprintf(e.stderr, "wrote %s: barrage debug %s shows one visit, barrage run %s replays it\n", *f.out, *f.out, *f.out)
	}
	return nil
}

func runImportHAR(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "import har", "FILE.har [-o test.yaml] [--assets] [--idle 2s] [--users users.csv] | FILE.har --push [--name NAME] [--assets] [--project P]")
	cf := addConvertFlags(fs)
	push := fs.Bool("push", false, "send the HAR to the server (barrage login), which converts it the same way and saves it as a new test")
	inProj := projectFlag(fs)
	name := fs.String("name", "", "with --push: the test's name (default: recording of HOST)")
	path, err := positionalArg(fs, args)
	if err != nil {
		return err
	}
	if *push && (*cf.out != "" || *cf.users != "" || flagGiven(fs, "idle") || flagGiven(fs, "max-think") || len(*cf.secrets) > 0) {
		return usageError(errors.New("--push sends the HAR alone, converted with the defaults and --assets, and with your secrets on the server; " +
			"-o, --users, --idle, --max-think and --secret are for a local conversion"))
	}
	opts, err := cf.options(e)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if *push {
		return pushHAR(ctx, e, inProj, data, *name, *cf.assets)
	}
	l, err := har.Decode(data)
	if err != nil {
		return &exitError{code: exitScriptError, err: fmt.Errorf("%s is not a HAR that Barrage can read:\n  %s", path, fieldLines(err))}
	}
	return cf.convert(e, l, opts)
}

// pushHAR sends a HAR to the server's POST /v1/tests/import and says what its conversion found.
func pushHAR(ctx context.Context, e env, inProj inProject, data []byte, name string, assets bool) error {
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	project, err := inProj.id(ctx, e, cl)
	if err != nil {
		return err
	}
	params := &api.ImportTestParams{Assets: &assets, Project: project}
	if name != "" {
		params.Name = &name
	}
	res, err := cl.ImportTestWithBodyWithResponse(ctx, params, "application/json", bytes.NewReader(data))
	if err != nil {
		return err
	}
	imp := res.JSON201
	if imp == nil {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	found := &har.Result{Requests: imp.Requests, Groups: imp.Groups, AssetsLeftOut: imp.AssetsLeftOut, Skipped: imp.Skipped, Warnings: imp.Warnings,
		Secrets: imp.Secrets}
	for _, c := range imp.Correlations {
		hc := har.Correlation{Var: c.Variable, Value: c.Value, Request: c.Request, Seen: c.Seen, Kind: har.ExtractorKind(c.Extractor), Expr: c.Expression}
		for _, u := range c.Uses {
			hc.Uses = append(hc.Uses, har.Use{Request: u.Request, Where: u.Where})
		}
		found.Correlations = append(found.Correlations, hc)
	}
	for _, p := range imp.Parameters {
		found.Parameters = append(found.Parameters, har.Parameter{Request: p.Request, Where: p.Where, Value: p.Value})
	}
	for _, m := range imp.Missed {
		found.Missed = append(found.Missed, har.Missed{Value: m.Value, Request: m.Request, Where: m.Where, Source: m.Source, Why: m.Why})
	}
	found.WriteSummary(e.stderr)
	fmt.Fprintf(e.stderr, "Test %q saved as revision %d: barrage tests debug %s shows one visit on an agent.\n", imp.Test.Name, imp.Test.LatestRevision, imp.Test.Id)
	fmt.Fprintln(e.stdout, imp.Test.Id)
	return nil
}

// fieldLines lists the fields of an invalid input, one a line.
func fieldLines(err error) string {
	var inv *barrage.InvalidError
	if !errors.As(err, &inv) {
		return err.Error()
	}
	lines := make([]string, len(inv.Fields))
	for i, f := range inv.Fields {
		lines[i] = f.Field + ": " + f.Reason
	}
	return strings.Join(lines, "\n  ")
}
