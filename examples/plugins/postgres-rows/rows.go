package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/barrage-load/barrage/sdk"
)

// configSchema describes the config. The host checks a script's config against it before
// Configure, and the marketplace shows it.
const configSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "postgres-rows config",
  "description": "A query whose rows are handed out, each once, as variables named after its columns.",
  "type": "object",
  "properties": {
    "dsn": {
      "type": "string",
      "minLength": 1,
      "description": "PostgreSQL URL or key=value connection string."
    },
    "dsn_env": {
      "type": "string",
      "pattern": "^[A-Za-z_][A-Za-z0-9_]*$",
      "description": "Environment variable of the plugin process holding the connection string; it must be on the plugin environment allow-list."
    },
    "query": {
      "type": "string",
      "minLength": 1,
      "description": "One SELECT (or VALUES) statement; its column names become the variables."
    },
    "batch": {
      "type": "integer",
      "minimum": 1,
      "maximum": 10000,
      "default": 500,
      "description": "Rows fetched from the server at a time."
    }
  },
  "required": ["query"],
  "oneOf": [
    { "required": ["dsn"] },
    { "required": ["dsn_env"] }
  ],
  "additionalProperties": false
}`

// newPlugin returns the plugin, for main to serve and for tests to start in-process. getenv
// reads the plugin process's environment, for dsn_env.
func newPlugin(getenv func(string) string) *sdk.Plugin {
	return &sdk.Plugin{
		Name:         "postgres-rows",
		Version:      "1.0.0",
		Description:  "Hands out the rows of a PostgreSQL query, each row once, as variables named after its columns.",
		ConfigSchema: configSchema,
		// A row is most often one user or one order: a fresh one each iteration. A script may
		// say scope: vu to keep one row per virtual user.
		Scope:   sdk.ScopeIteration,
		Element: &element{getenv: getenv},
	}
}

// config is the plugin's config; see configSchema.
type config struct {
	DSN    string `json:"dsn"`
	DSNEnv string `json:"dsn_env"`
	Query  string `json:"query"`
	Batch  *int   `json:"batch"`
}

const (
	defaultBatch = 500
	maxBatch     = 10000
)

// element hands out the rows of the configured query.
type element struct {
	getenv func(string) string

	// mu makes every row go to one caller only: the host may call Next from several
	// goroutines at once.
	mu  sync.Mutex
	cur *cursor // nil until configured
}

// cursor reads a query's rows a batch at a time.
//
// The query runs as a PostgreSQL cursor declared WITH HOLD: the server computes the whole
// result when it is declared, in Configure, so that errors in the query, even in its last
// rows, show there; it keeps the result outside any transaction, so that no snapshot is held
// open for the length of a run; and the plugin holds no more than a batch or two of rows in
// memory, however many the query returns.
type cursor struct {
	conn    *pgconn.PgConn // nil once closed
	fetch   string         // the FETCH statement, for batch rows
	batch   int
	columns []string
	rows    []sdk.Vars // fetched and not yet handed out
	done    bool       // the server has no more rows
}

// cursorName is the cursor's name on the plugin's own connection.
const cursorName = "barrage_rows"

// varName is what a script accepts after the plugin's alias: ${rows.email}.
var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Configure connects, declares the cursor, and fetches the first batch, which tells the
// columns. A second Configure starts over with a new query.
func (e *element) Configure(ctx context.Context, raw []byte) ([]string, error) {
	var cfg config
	if err := sdk.DecodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	dsnField, dsn := "dsn", cfg.DSN
	switch {
	case cfg.DSN != "" && cfg.DSNEnv != "":
		return nil, &sdk.ConfigError{Field: "dsn", Reason: "give dsn or dsn_env, not both"}
	case cfg.DSN == "" && cfg.DSNEnv == "":
		return nil, &sdk.ConfigError{Field: "dsn", Reason: "required: give dsn, or dsn_env naming an environment variable that holds it"}
	case cfg.DSNEnv != "":
		dsnField, dsn = "dsn_env", e.getenv(cfg.DSNEnv)
		if dsn == "" {
			// Plugins start with an environment limited to an allow-list, so a variable set
			// for Barrage is not seen here unless the operator allows it.
			return nil, &sdk.ConfigError{Field: "dsn_env", Reason: fmt.Sprintf("%s is not set in the plugin's environment: set it, and add it to the plugin environment allow-list", cfg.DSNEnv)}
		}
	}
	if cfg.Query == "" {
		return nil, &sdk.ConfigError{Field: "query", Reason: "required"}
	}
	batch := defaultBatch
	if cfg.Batch != nil {
		batch = *cfg.Batch
	}
	if batch < 1 || batch > maxBatch {
		return nil, &sdk.ConfigError{Field: "batch", Reason: fmt.Sprintf("%d is out of range: want 1 to %d", batch, maxBatch)}
	}

	pc, err := pgconn.ParseConfig(dsn)
	if err != nil {
		// pgconn leaves the password out of its errors.
		return nil, &sdk.ConfigError{Field: dsnField, Reason: err.Error()}
	}
	// The plugin reads: a query that would write is refused by the server, whatever it says.
	pc.RuntimeParams["default_transaction_read_only"] = "on"
	if pc.RuntimeParams["application_name"] == "" {
		pc.RuntimeParams["application_name"] = "barrage postgres-rows"
	}
	conn, err := pgconn.ConnectConfig(ctx, pc)
	if err != nil {
		return nil, &sdk.ConfigError{Field: dsnField, Reason: err.Error()}
	}
	c := &cursor{conn: conn, batch: batch, fetch: "FETCH FORWARD " + strconv.Itoa(batch) + " FROM " + cursorName}
	if err := c.open(ctx, cfg.Query); err != nil {
		c.close(ctx)
		return nil, err
	}

	e.mu.Lock()
	old := e.cur
	e.cur = c
	e.mu.Unlock()
	if old != nil {
		old.close(ctx)
	}
	return c.columns, nil
}

// Next hands out up to n rows, fetching more from the server as needed. With the last rows it
// returns sdk.ErrExhausted, and closes the connection. A Next whose context ends during a fetch
// loses the connection (pgconn closes it rather than leave it in an unknown state), so later
// calls fail: the run is being stopped then anyway.
func (e *element) Next(ctx context.Context, n int) ([]sdk.Vars, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.cur
	if c == nil {
		return nil, errors.New("postgres-rows: Next before Configure")
	}
	for len(c.rows) < n && !c.done {
		if err := c.fetchBatch(ctx); err != nil {
			return nil, fmt.Errorf("fetch rows: %w", err)
		}
	}
	k := min(n, len(c.rows))
	out := c.rows[:k:k]
	c.rows = c.rows[k:]
	if c.done && len(c.rows) == 0 {
		c.close(ctx)
		return out, sdk.ErrExhausted
	}
	return out, nil
}

// open declares the cursor for query and fetches the first batch.
func (c *cursor) open(ctx context.Context, query string) error {
	// The extended protocol (ExecParams, not Exec) runs one statement only, so a query such as
	// "SELECT 1; DROP TABLE users" is refused rather than run in part.
	declare := "DECLARE " + cursorName + " NO SCROLL CURSOR WITH HOLD FOR " + query
	if _, err := c.conn.ExecParams(ctx, declare, nil, nil, nil, nil).Close(); err != nil {
		return queryError(err)
	}
	if err := c.fetchBatch(ctx); err != nil {
		return queryError(err)
	}
	seen := make(map[string]bool, len(c.columns))
	for _, col := range c.columns {
		switch {
		case !varName.MatchString(col):
			return &sdk.ConfigError{Field: "query", Reason: fmt.Sprintf("column %q is not a variable name: name it with AS, using letters, digits and _", col)}
		case seen[col]:
			return &sdk.ConfigError{Field: "query", Reason: fmt.Sprintf("two columns are named %q: rename one with AS", col)}
		}
		seen[col] = true
	}
	return nil
}

// fetchBatch fetches the next batch of rows. Values are read in PostgreSQL's text form, as
// psql prints them (true is t, a timestamp is 2025-01-02 03:04:05+00); NULL becomes "".
func (c *cursor) fetchBatch(ctx context.Context) error {
	rr := c.conn.ExecParams(ctx, c.fetch, nil, nil, nil, nil) // nil result formats: all text
	if c.columns == nil {
		for _, f := range rr.FieldDescriptions() {
			c.columns = append(c.columns, f.Name)
		}
	}
	var rows []sdk.Vars
	for rr.NextRow() {
		set := make(sdk.Vars, len(c.columns))
		for i, v := range rr.Values() {
			set[c.columns[i]] = string(v)
		}
		rows = append(rows, set)
	}
	if _, err := rr.Close(); err != nil {
		return err
	}
	c.rows = append(c.rows, rows...)
	c.done = len(rows) < c.batch
	return nil
}

// close ends the connection, and with it the cursor.
func (c *cursor) close(ctx context.Context) {
	if c.conn != nil {
		_ = c.conn.Close(ctx)
		c.conn = nil
	}
}

// queryError makes an error of the server about the query a ConfigError naming the field.
func queryError(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return &sdk.ConfigError{Field: "query", Reason: fmt.Sprintf("%s (SQLSTATE %s)", pgErr.Message, pgErr.Code)}
	}
	return err
}
