// Command barrage is Barrage in one binary: the server, its migrations, and the client of its
// API.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/barrage-load/barrage/internal/config"
	"github.com/barrage-load/barrage/internal/pluginhost"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	pluginhost.Launch() // when started as a plugin's launcher, becomes the plugin
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := execute(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) && !errors.Is(err, errUsage) {
			fmt.Fprintln(os.Stderr, "barrage:", err)
		}
		os.Exit(exitCode(err))
	}
}

// errUsage is returned after usage was printed.
var errUsage = errors.New("usage")

// usageError is wrong usage that says what was wrong (exit status 2).
func usageError(err error) error { return &exitError{code: 2, err: err} }

// flagGiven reports whether the flag name was given on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// parseArgs parses args into fs; wrong flags are wrong usage, printed by fs.
func parseArgs(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil && !errors.Is(err, flag.ErrHelp) {
		return errUsage
	} else if err != nil {
		return err
	}
	return nil
}

// loadConfig is config.Load for a command: what is wrong with its flags, its arguments or the
// environment is wrong usage (exit status 2).
func loadConfig(e env, name string, args []string) (config.Config, error) {
	cfg, err := config.Load(name, args, e.getenv, e.stderr)
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
		return cfg, err
	case errors.Is(err, config.ErrFlags):
		return cfg, errUsage // the flag package printed it
	}
	return cfg, usageError(err)
}

func exitCode(err error) int {
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, flag.ErrHelp):
		return 0 // -h and --help ask for the usage: it is no mistake (as git, go and k6 answer)
	case errors.Is(err, errUsage):
		return 2
	}
	return 1
}

// env is what a command reads from the process: its environment and standard streams.
type env struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

type command struct {
	name, summary string
	run           func(ctx context.Context, e env, args []string) error
}

func commands() []command {
	return []command{
		{"serve", "run the API server (starts its own PostgreSQL when DATABASE_URL is empty)", runServe},
		{"migrate", "apply database migrations: migrate up | migrate status", runMigrate},
		{"run", "run a script locally and print its results: run [--vus N --duration D --rate R] SCRIPT", runRun},
		{"debug", "run one iteration of one VU and show every request and response: debug SCRIPT", runDebug},
		{"compare", "hold a run's result against a base's and say what regressed: compare BASE.json NEW.json", runCompare},
		{"sweep", "run a script at one concurrency after another and find the knee: sweep --vus 2,4,8,16 --step 30s SCRIPT", runSweep},
		{"report", "write a run's result as an HTML report with charts: report RESULT.json -o report.html", runReport},
		{"record", "record a visit through a proxy (http and https) as a script: record -o test.yaml [--listen 127.0.0.1:8888]", runRecord},
		{"import", "turn a browser's HAR export into a script: import har FILE.har -o test.yaml", runImport},
		{"agent", "run a measuring agent that takes work from a server: agent --server URL", runAgent},
		{"agents", "the agents you may run on: agents list | create | delete", runAgents},
		{"schedules", "run tests by the clock: schedules create | list | show | firings | pause | resume | delete", runSchedules},
		{"notifications", "tell a project's people when runs end, fail, or regress: notifications create | list | show | pause | resume | test | deliveries | delete", runNotifications},
		{"targets", "the hosts you proved you control, which shared agents load for you: targets add | verify | list | delete", runTargets},
		{"secrets", "values your scripts read as ${secret.NAME}, sealed on the server: secrets set | list | delete", runSecrets},
		{"tests", "tests on the server: tests push | list | show | debug | delete | baseline | trend", runTests},
		{"scripts", "scripts on the server: scripts generate TEST_ID", runScripts},
		{"runs", "runs on the server's agents: runs start | list | show | watch | cancel | results", runRuns},
		{"plugin", "plugins: plugin add | list | check | new | keygen | publish | search | info | install", runPlugin},
		{"namespaces", "marketplace namespaces: namespaces create | list | add-key", runNamespaces},
		{"demo-shop", "serve a small shop on 127.0.0.1:8081 for the example scripts", runDemoShop},
		{"signup", "create an account with an invitation code", runSignup},
		{"login", "sign in and store credentials for the other commands", runLogin},
		{"logout", "sign out and forget the stored credentials", runLogout},
		{"me", "show the signed-in user and license", runMe},
		{"password", "change your password (signs out every session; lists your API tokens and revokes them if you say so)", runPassword},
		{"tokens", "personal API tokens: tokens create | list | delete", runTokens},
		{"projects", "what a team shares: projects list | create | show | use | invite | invitations | accept | decline | role | remove | delete", runProjects},
		{"audit", "the audit log: who did what, from where, with what outcome (admins: everyone's): audit [--action A] [--since 24h] [--json-lines]", runAudit},
		{"admin", "admin commands: admin invite | invitations | users | user | plugins | plugin", runAdmin},
		{"version", "print the version", func(_ context.Context, e env, _ []string) error {
			fmt.Fprintln(e.stdout, "barrage", version)
			return nil
		}},
	}
}

func execute(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	e := env{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stderr)
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, e, args[1:])
		}
	}
	fmt.Fprintf(stderr, "barrage: unknown command %q\n\n", args[0])
	usage(stderr)
	return errUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: barrage <command> [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun barrage <command> -h for a command's flags.")
}
