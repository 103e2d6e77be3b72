package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/barrage"
)

// newFlags returns a flag set that reports errors to e.stderr and does not exit.
func newFlags(e env, name, args string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: barrage %s %s\n", name, args)
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 { // a command without flags says so by listing none
			fmt.Fprint(e.stderr, "\nFlags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string, positional int) error {
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != positional {
		fs.Usage()
		return errUsage
	}
	return nil
}

func runSignup(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "signup", "--code CODE --email EMAIL --name NAME  (password on stdin or prompted)")
	code := fs.String("code", "", "invitation code")
	email := fs.String("email", "", "email address")
	name := fs.String("name", "", "your name")
	server := fs.String("server", "", "server URL (default $BARRAGE_SERVER or http://127.0.0.1:8080)")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	if *server != "" {
		e = withServer(e, *server)
	}
	pw, err := readPassword(e, "Password (12 characters or more): ")
	if err != nil {
		return err
	}
	cl, c, err := apiClient(ctx, e, false)
	if err != nil {
		return err
	}
	res, err := cl.SignupWithResponse(ctx, api.SignupJSONRequestBody{InvitationCode: *code, Email: *email, Name: *name, Password: pw})
	if err != nil {
		return err
	}
	if res.JSON202 == nil {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	// Sign-up does not say whether the email already had an account: signing in does.
	if err := login(ctx, e, cl, c.Server, *email, pw); err != nil {
		return fmt.Errorf("the invitation was redeemed, but signing in failed (%w): if %s already had an account, "+
			"sign in with its own password (barrage login)", err, *email)
	}
	fmt.Fprintf(e.stdout, "Account created for %s; signed in to %s.\n", *email, c.Server)
	return nil
}

// login signs email in with password and keeps the session's credentials for server.
func login(ctx context.Context, e env, cl *api.ClientWithResponses, server, email, password string) error {
	res, err := cl.LoginWithResponse(ctx, api.LoginJSONRequestBody{Email: email, Password: password})
	if err != nil {
		return err
	}
	if res.JSON200 == nil {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	return saveCredentials(e, sessionCredentials(server, *res.JSON200))
}

func runLogin(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "login", "--email EMAIL  (password on stdin or prompted)")
	email := fs.String("email", "", "email address")
	server := fs.String("server", "", "server URL (default $BARRAGE_SERVER or http://127.0.0.1:8080)")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	if *email == "" {
		fs.Usage()
		return errUsage
	}
	if *server != "" {
		e = withServer(e, *server)
	}
	pw, err := readPassword(e, "Password: ")
	if err != nil {
		return err
	}
	cl, c, err := apiClient(ctx, e, false)
	if err != nil {
		return err
	}
	if err := login(ctx, e, cl, c.Server, *email, pw); err != nil {
		return err
	}
	path, _ := credentialsPath(e)
	fmt.Fprintf(e.stdout, "Signed in to %s as %s (credentials in %s).\n", c.Server, *email, path)
	return nil
}

func runLogout(ctx context.Context, e env, args []string) error {
	if err := parseFlags(newFlags(e, "logout", ""), args, 0); err != nil {
		return err
	}
	c, err := loadCredentials(e)
	if err != nil {
		return err
	}
	if c.RefreshToken != "" {
		cl, _, err := apiClient(ctx, e, false)
		if err != nil {
			return err
		}
		res, err := cl.LogoutWithResponse(ctx, api.LogoutJSONRequestBody{RefreshToken: c.RefreshToken})
		if err != nil {
			return err
		}
		if res.StatusCode() != 204 {
			return api.ProblemError(res.HTTPResponse, res.Body)
		}
	}
	if err := saveCredentials(e, credentials{Server: c.Server}); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "Signed out.")
	return nil
}

func runMe(ctx context.Context, e env, args []string) error {
	if err := parseFlags(newFlags(e, "me", ""), args, 0); err != nil {
		return err
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	res, err := cl.GetMeWithResponse(ctx)
	if err != nil {
		return err
	}
	if res.JSON200 == nil {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	u := res.JSON200
	fmt.Fprintf(e.stdout, "%s <%s>, %s\nid: %s\nlicense: %s\n", u.Name, u.Email, u.Role, u.Id, licenseLine(u.License))
	guessedLine(e, u)
	lic, err := cl.GetMyLicenseWithResponse(ctx)
	if err != nil {
		return err
	}
	if lic.JSON200 == nil {
		return api.ProblemError(lic.HTTPResponse, lic.Body)
	}
	if q := lic.JSON200.Quotas; q != nil {
		fmt.Fprintf(e.stdout, "using: %s\n", usingLine(*q))
	}
	return nil
}

// guessedLine warns, when someone has been guessing u's password from many addresses.
func guessedLine(e env, u *api.User) {
	if at := u.PasswordGuessedAt; at != nil {
		fmt.Fprintf(e.stdout, "warning: wrong passwords came from many addresses, last at %s: someone is guessing this account's password (addresses it has not signed in from are slowed)\n",
			at.Local().Format(time.DateTime))
	}
}

// usingLine says what a user keeps against each quota: storage 1.2 MiB of 256.0 MiB, tests 3 of 200.
func usingLine(q map[string]api.QuotaUse) string {
	var used []string
	for _, name := range slices.Sorted(maps.Keys(q)) {
		use := q[name]
		if name == barrage.QuotaStorageBytes {
			used = append(used, fmt.Sprintf("storage %s of %s", sizeText(use.Used), sizeText(use.Limit)))
		} else {
			used = append(used, fmt.Sprintf("%s %d of %d", strings.ReplaceAll(name, "_", " "), use.Used, use.Limit))
		}
	}
	return strings.Join(used, ", ")
}

// sizeText is n bytes as people read a size: 246 B, 12.5 KiB, 256.0 MiB.
func sizeText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func licenseLine(l *api.License) string {
	if l == nil || l.Unlimited {
		return "unlimited"
	}
	s := fmt.Sprintf("%s: %d VUs per run, runs up to %s, %d at a time, valid until %s",
		deref(l.Plan), deref(l.MaxVus), time.Duration(deref(l.MaxRunDurationSeconds))*time.Second,
		deref(l.MaxConcurrentRuns), deref(l.ValidUntil).Format(time.DateOnly))
	if deref(l.Expired) {
		s += " (expired)"
	}
	return s
}

func deref[T any](p *T) T {
	var zero T
	if p != nil {
		zero = *p
	}
	return zero
}

// withServer makes the client commands talk to server.
func withServer(e env, server string) env {
	get := e.getenv
	e.getenv = func(k string) string {
		if k == "BARRAGE_SERVER" {
			return strings.TrimRight(server, "/")
		}
		return get(k)
	}
	return e
}

// runPassword changes your password: every session is signed out, and your personal API tokens
// are listed and revoked with it when you say so (asked when a terminal is there to ask).
func runPassword(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "password", "[--revoke-tokens | --keep-tokens]  (the current and the new password prompted, or on stdin, a line each)")
	revoke := fs.Bool("revoke-tokens", false, "revoke your personal API tokens with the change")
	keep := fs.Bool("keep-tokens", false, "keep your personal API tokens without asking")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	if *revoke && *keep {
		return usageError(errors.New("--revoke-tokens and --keep-tokens: give one"))
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	in := newSecretReader(e)
	cur, err := in.read("Current password: ")
	if err != nil {
		return err
	}
	next, err := in.read("New password: ")
	if err != nil {
		return err
	}
	toks, _, err := tokenPages(ctx, cl)(nil)
	if err != nil {
		return err
	}
	if len(toks) > 0 && !*keep {
		fmt.Fprintln(e.stderr, "Your personal API tokens stay valid after a password change unless you revoke them:")
		if err := printTable(e, tokenHeader, tokenPages(ctx, cl), tokenRow); err != nil {
			return err
		}
		if !*revoke && in.terminal {
			answer, err := in.line("Revoke them all with the change? [y/N] ")
			if err != nil {
				return err
			}
			*revoke = strings.EqualFold(strings.TrimSpace(answer), "y")
		}
	}
	res, err := cl.UpdateMeWithResponse(ctx, api.UpdateMeRequest{CurrentPassword: &cur, NewPassword: &next, RevokeTokens: revoke})
	if err != nil {
		return err
	}
	if res.JSON200 == nil {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	what := "your personal API tokens were kept"
	if *revoke {
		what = "your personal API tokens were revoked"
	}
	fmt.Fprintf(e.stdout, "Password changed: every session was signed out and %s. Sign in again: barrage login --email %s\n", what, res.JSON200.Email)
	return nil
}

// secretReader reads passwords and answers from a terminal (passwords unechoed), or lines of
// standard input.
type secretReader struct {
	e        env
	terminal bool
	r        *bufio.Reader
}

func newSecretReader(e env) *secretReader {
	f, ok := e.stdin.(*os.File)
	return &secretReader{e: e, terminal: ok && term.IsTerminal(int(f.Fd())), r: bufio.NewReader(e.stdin)}
}

func (s *secretReader) read(prompt string) (string, error) {
	if s.terminal {
		fmt.Fprint(s.e.stderr, prompt)
		b, err := term.ReadPassword(int(s.e.stdin.(*os.File).Fd()))
		fmt.Fprintln(s.e.stderr)
		return string(b), err
	}
	line, err := s.line("")
	if err == nil && line == "" {
		err = errors.New("nothing given on standard input") // a password, or a secret's value
	}
	return line, err
}

func (s *secretReader) line(prompt string) (string, error) {
	fmt.Fprint(s.e.stderr, prompt)
	line, err := s.r.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}
