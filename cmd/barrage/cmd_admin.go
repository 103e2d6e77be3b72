package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/account"
	"github.com/barrage-load/barrage/internal/barrage"
)

func runAdmin(ctx context.Context, e env, args []string) error {
	sub := map[string]func(context.Context, env, []string) error{
		"invite": runAdminInvite, "invitations": runAdminInvitations, "users": runAdminUsers, "user": runAdminUser,
		"plugins": runAdminPlugins, "plugin": runAdminPlugin,
	}
	return dispatch(ctx, e, "admin", sub, args)
}

// licenseFlags are the flags that describe a license template.
type licenseFlags struct {
	template, plan                 *string
	maxVUs, maxRunSeconds, maxRuns *int
	validDays                      *int
	quotas                         quotaFlag
	set                            func(name string) bool
}

// quotaFlag collects --quota NAME=N, a license's own quotas (0: the server's default again).
type quotaFlag map[string]int64

func (q quotaFlag) String() string { return "" }

func (q quotaFlag) Set(v string) error {
	name, n, ok := strings.Cut(v, "=")
	size, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil || size < 0 {
		return fmt.Errorf("want NAME=N, as tests=500 or storage_bytes=1073741824")
	}
	if !(&barrage.Quotas{}).Set(name, size) {
		return fmt.Errorf("%q is no quota: storage_bytes, tests, namespaces, pending_versions or targets", name)
	}
	q[name] = size
	return nil
}

func addLicenseFlags(fs *flag.FlagSet, defaultTemplate string) licenseFlags {
	l := licenseFlags{
		template:      fs.String("template", defaultTemplate, "license template (demo: 100 VUs, 30-minute runs, 2 at a time, 14 days); empty with limits for a custom license"),
		plan:          fs.String("plan", "", "license plan name (custom licenses)"),
		maxVUs:        fs.Int("max-vus", 0, "virtual users per run"),
		maxRunSeconds: fs.Int("max-run-seconds", 0, "longest run, in seconds"),
		maxRuns:       fs.Int("max-concurrent-runs", 0, "runs at a time"),
		validDays:     fs.Int("valid-days", 0, "days the license is valid after sign-up"),
		quotas:        quotaFlag{},
	}
	fs.Var(l.quotas, "quota", "the license's own quota NAME=N over the server's default (storage_bytes, tests, namespaces, pending_versions, targets; 0: the default again); repeat for several")
	l.set = func(name string) bool {
		found := false
		fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
		return found
	}
	return l
}

// template returns the license the flags describe, or nil for the role's default.
func (l licenseFlags) apiTemplate() *api.LicenseTemplate {
	t := &api.LicenseTemplate{}
	given := false
	if *l.template != "" {
		v := api.LicenseTemplateTemplate(*l.template)
		t.Template, given = &v, true
	}
	opt := func(name string, v *int) *int {
		if l.set(name) {
			given = true
			return v
		}
		return nil
	}
	t.MaxVus = opt("max-vus", l.maxVUs)
	t.MaxRunDurationSeconds = opt("max-run-seconds", l.maxRunSeconds)
	t.MaxConcurrentRuns = opt("max-concurrent-runs", l.maxRuns)
	t.ValidDays = opt("valid-days", l.validDays)
	if l.set("plan") {
		t.Plan, given = l.plan, true
	}
	if t.QuotaLimits = api.NewQuotaLimits(l.quotas); t.QuotaLimits != nil {
		given = true
	}
	if !given {
		return nil
	}
	return t
}

func runAdminInvite(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "admin invite", "[--role user|admin] [--template demo | --max-vus N ...] [--quota NAME=N ...] [--uses N] [--expires-in-days N] [--note TEXT] [--local]")
	role := fs.String("role", "user", "role of the accounts created: user or admin")
	uses := fs.Int("uses", 1, "how many accounts the code can create")
	expires := fs.Int("expires-in-days", 7, "days until the code expires")
	note := fs.String("note", "", "a note for admins (who it is for)")
	local := fs.Bool("local", false, "write to the database directly instead of calling the API (with --database-url or --data-dir)")
	dbURL := fs.String("database-url", "", "with --local: PostgreSQL URL (default $DATABASE_URL)")
	dataDir := fs.String("data-dir", "", "with --local: serve's data folder holding the embedded database (default $BARRAGE_DATA_DIR or .barrage)")
	lic := addLicenseFlags(fs, "")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	body := api.CreateInvitationJSONRequestBody{
		Role: (*api.Role)(role), Uses: uses, ExpiresInDays: expires, Note: note, License: lic.apiTemplate(),
	}
	var inv api.CreatedInvitation
	if *local {
		var dbArgs []string
		if *dbURL != "" {
			dbArgs = append(dbArgs, "--database-url", *dbURL)
		}
		if *dataDir != "" {
			dbArgs = append(dbArgs, "--data-dir", *dataDir)
		}
		svc, done, err := localAccounts(ctx, e, dbArgs)
		if err != nil {
			return err
		}
		defer done()
		in := account.InvitationInput{
			Role: barrage.Role(*role), Uses: *uses, ExpiresIn: time.Duration(*expires) * 24 * time.Hour, Note: *note,
			License: localLicense(body.License),
		}
		got, code, err := svc.CreateInvitation(ctx, nil, in)
		if err != nil {
			return err
		}
		inv = api.CreatedInvitation{Id: got.ID, Role: api.Role(got.Role), UsesTotal: got.UsesTotal, ExpiresAt: got.ExpiresAt, Code: code}
	} else {
		cl, _, err := apiClient(ctx, e, true)
		if err != nil {
			return err
		}
		res, err := cl.CreateInvitationWithResponse(ctx, body)
		if err != nil {
			return err
		}
		if res.JSON201 == nil {
			return api.ProblemError(res.HTTPResponse, res.Body)
		}
		inv = *res.JSON201
	}
	fmt.Fprintf(e.stderr, "Invitation %s: role %s, %d use(s), expires %s. Its code, on standard output, is shown once.\n",
		inv.Id, inv.Role, inv.UsesTotal, inv.ExpiresAt.Format(time.RFC3339))
	fmt.Fprintln(e.stdout, inv.Code) // alone, as tokens create prints a token: code=$(barrage admin invite)
	return nil
}

func localLicense(t *api.LicenseTemplate) *account.LicenseInput {
	if t == nil {
		return nil
	}
	in := &account.LicenseInput{Template: (*string)(t.Template), Plan: t.Plan, MaxVUs: t.MaxVus, MaxConcurrentRuns: t.MaxConcurrentRuns, ValidDays: t.ValidDays,
		Quotas: t.QuotaLimits.ByName()}
	if t.MaxRunDurationSeconds != nil {
		d := time.Duration(*t.MaxRunDurationSeconds) * time.Second
		in.MaxRunDuration = &d
	}
	return in
}

func runAdminInvitations(ctx context.Context, e env, args []string) error {
	if err := parseFlags(newFlags(e, "admin invitations", ""), args, 0); err != nil {
		return err
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	return printTable(e, "ID\tROLE\tLICENSE\tUSES LEFT\tSTATE\tEXPIRES\tNOTE",
		func(cursor *string) ([]api.Invitation, *string, error) {
			res, err := cl.ListInvitationsWithResponse(ctx, &api.ListInvitationsParams{Cursor: cursor})
			if err != nil {
				return nil, nil, err
			}
			if res.JSON200 == nil {
				return nil, nil, api.ProblemError(res.HTTPResponse, res.Body)
			}
			return res.JSON200.Items, res.JSON200.NextCursor, nil
		},
		func(inv api.Invitation) string {
			lic := "none"
			if inv.License != nil {
				lic = inv.License.Plan
			}
			return fmt.Sprintf("%s\t%s\t%s\t%d/%d\t%s\t%s\t%s", inv.Id, inv.Role, lic, inv.UsesLeft, inv.UsesTotal, inv.State,
				inv.ExpiresAt.Format(time.DateOnly), inv.Note)
		})
}

func runAdminUsers(ctx context.Context, e env, args []string) error {
	if err := parseFlags(newFlags(e, "admin users", ""), args, 0); err != nil {
		return err
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	return printTable(e, "ID\tEMAIL\tNAME\tROLE\tSTATUS\tLICENSE",
		func(cursor *string) ([]api.User, *string, error) {
			res, err := cl.ListUsersWithResponse(ctx, &api.ListUsersParams{Cursor: cursor})
			if err != nil {
				return nil, nil, err
			}
			if res.JSON200 == nil {
				return nil, nil, api.ProblemError(res.HTTPResponse, res.Body)
			}
			return res.JSON200.Items, res.JSON200.NextCursor, nil
		},
		func(u api.User) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", u.Id, u.Email, u.Name, u.Role, status(u.Disabled), licenseLine(u.License))
		})
}

func status(disabled bool) string {
	if disabled {
		return "disabled"
	}
	return "active"
}

func runAdminUser(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "admin user", "ID [--role R] [--disable | --enable] [--template demo | --max-vus N ...] [--quota NAME=N ...] [--remove-license]")
	role := fs.String("role", "", "new role: user or admin")
	disable := fs.Bool("disable", false, "disable the account and sign it out everywhere")
	enable := fs.Bool("enable", false, "enable the account")
	remove := fs.Bool("remove-license", false, "remove the license (no limits)")
	lic := addLicenseFlags(fs, "")
	if len(args) == 0 {
		fs.Usage()
		return errUsage
	}
	idArg := args[0]
	if err := parseFlags(fs, args[1:], 0); err != nil {
		return err
	}
	id, err := uuid.Parse(idArg)
	if err != nil {
		return fmt.Errorf("%q is not a user id", idArg)
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	var body api.UpdateUserJSONRequestBody
	changed := false
	if *role != "" {
		body.Role, changed = (*api.Role)(role), true
	}
	if *disable || *enable {
		body.Disabled, changed = disable, true
	}
	if *remove {
		body.License.SetNull()
		changed = true
	} else if t := lic.apiTemplate(); t != nil {
		if lic.set("valid-days") {
			return fmt.Errorf("--valid-days is for invitations; a user's license is extended by a template or by the API's valid_until")
		}
		body.License.Set(api.LicenseUpdate{
			Template: (*api.LicenseUpdateTemplate)(t.Template), Plan: t.Plan, MaxVus: t.MaxVus,
			MaxRunDurationSeconds: t.MaxRunDurationSeconds, MaxConcurrentRuns: t.MaxConcurrentRuns, QuotaLimits: t.QuotaLimits,
		})
		changed = true
	}
	var u *api.User
	if changed {
		res, err := cl.UpdateUserWithResponse(ctx, id, body)
		if err != nil {
			return err
		}
		if res.JSON200 == nil {
			return api.ProblemError(res.HTTPResponse, res.Body)
		}
		u = res.JSON200
	} else {
		res, err := cl.GetUserWithResponse(ctx, id)
		if err != nil {
			return err
		}
		if res.JSON200 == nil {
			return api.ProblemError(res.HTTPResponse, res.Body)
		}
		a := res.JSON200 // the user, with their activity, which this command does not show
		u = &api.User{Id: a.Id, Email: a.Email, Name: a.Name, Role: a.Role, Disabled: a.Disabled, License: a.License,
			PasswordGuessedAt: a.PasswordGuessedAt, CreatedAt: a.CreatedAt}
	}
	fmt.Fprintf(e.stdout, "%s <%s>, %s, %s\nlicense: %s\n", u.Name, u.Email, u.Role, status(u.Disabled), licenseLine(u.License))
	guessedLine(e, u)
	usage, err := cl.GetUserLicenseWithResponse(ctx, id)
	if err != nil {
		return err
	}
	if usage.JSON200 == nil {
		return api.ProblemError(usage.HTTPResponse, usage.Body)
	}
	if q := usage.JSON200.Quotas; q != nil {
		fmt.Fprintf(e.stdout, "using: %s\n", usingLine(*q))
	}
	return nil
}
