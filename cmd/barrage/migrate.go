package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/barrage-load/barrage/internal/logging"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/server"
)

func runMigrate(ctx context.Context, e env, args []string) error {
	if len(args) == 0 || (args[0] != "up" && args[0] != "status") {
		fmt.Fprintln(e.stderr, "Usage: barrage migrate <up|status> [serve's database flags]")
		return errUsage
	}
	cfg, err := loadConfig(e, "migrate "+args[0], args[1:])
	if err != nil {
		return err
	}
	log := logging.New(e.stderr, cfg.LogFormat, cfg.LogLevel)
	db, err := server.OpenDatabase(ctx, cfg, log, true)
	if err != nil {
		return err
	}
	defer db.Close()
	if args[0] == "status" {
		ms, err := postgres.Migrations()
		if err != nil {
			return err
		}
		if err := postgres.CheckSchema(ctx, db.Pool); err != nil {
			fmt.Fprintln(e.stdout, err)
		} else {
			fmt.Fprintf(e.stdout, "database schema is up to date at version %d\n", ms[len(ms)-1].Version)
		}
		return nil
	}
	res, err := postgres.Migrate(ctx, db.Pool)
	if err != nil {
		return err
	}
	for _, name := range res.Applied {
		log.Info("applied migration", slog.String("name", name))
	}
	if len(res.River) > 0 {
		log.Info("applied River's job queue migrations", slog.Any("versions", res.River))
	}
	fmt.Fprintf(e.stdout, "database schema at version %d (was %d)\n", res.To, res.From)
	return nil
}
