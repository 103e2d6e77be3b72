package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/barrage-load/barrage/api"
)

// credentials are what `barrage login` keeps for the other client commands.
type credentials struct {
	Server       string    `json:"server"`
	AccessToken  string    `json:"access_token,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	ExpiresAt    time.Time `json:"expires_at,omitempty"`
	// Token is a personal API token, used instead of signing in when set (BARRAGE_TOKEN).
	Token string `json:"-"`
	// SignedInTo names the server the stored tokens are for, when it is not Server.
	SignedInTo string `json:"-"`
	// Project is the project commands work in when they name none (`barrage projects use`).
	Project string `json:"project,omitempty"`
}

// credentialsPath is $XDG_CONFIG_HOME/barrage/credentials.json (or the OS's equivalent), or
// BARRAGE_CONFIG_DIR/credentials.json.
func credentialsPath(e env) (string, error) { return configPath(e, "credentials.json") }

// configPath is the file name in Barrage's config folder: BARRAGE_CONFIG_DIR, else
// $XDG_CONFIG_HOME/barrage (or the OS's equivalent).
func configPath(e env, name string) (string, error) {
	dir := e.getenv("BARRAGE_CONFIG_DIR")
	if dir == "" {
		base := e.getenv("XDG_CONFIG_HOME")
		if base == "" {
			home := e.getenv("HOME")
			if home == "" {
				var err error
				if base, err = os.UserConfigDir(); err != nil {
					return "", fmt.Errorf("find the config folder: %w", err)
				}
			} else {
				base = filepath.Join(home, ".config")
			}
		}
		dir = filepath.Join(base, "barrage")
	}
	return filepath.Join(dir, name), nil
}

func loadCredentials(e env) (credentials, error) {
	var c credentials
	path, err := credentialsPath(e)
	if err != nil {
		return c, err
	}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return c, fmt.Errorf("read credentials: %w", err)
	}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &c); err != nil {
			return c, fmt.Errorf("read credentials %s: %w", path, err)
		}
	}
	signedInTo := c.Server
	if s := e.getenv("BARRAGE_SERVER"); s != "" {
		c.Server = strings.TrimRight(s, "/")
	}
	if c.Server == "" {
		c.Server = "http://127.0.0.1:8080"
	}
	if signedInTo != "" && signedInTo != c.Server {
		// The stored tokens belong to another server: never send them elsewhere.
		c.AccessToken, c.RefreshToken, c.SignedInTo = "", "", signedInTo
	}
	c.Token = e.getenv("BARRAGE_TOKEN")
	return c, nil
}

// saveCredentials writes c readable by its owner only: it holds a refresh token.
func saveCredentials(e env, c credentials) error {
	path, err := credentialsPath(e)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("save credentials: %w", err)
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".credentials-*")
	if err != nil {
		return fmt.Errorf("save credentials: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("save credentials: %w", err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// apiClient returns a client of the server in the stored credentials. It renews the access
// token with the refresh token when it is about to expire, and saves the new pair.
func apiClient(ctx context.Context, e env, needAuth bool) (*api.ClientWithResponses, credentials, error) {
	return apiClientWith(ctx, e, needAuth, &http.Client{Timeout: 30 * time.Second})
}

// apiClientWith is apiClient on a given HTTP client: one without a timeout follows a stream.
func apiClientWith(ctx context.Context, e env, needAuth bool, hc *http.Client) (*api.ClientWithResponses, credentials, error) {
	c, err := loadCredentials(e)
	if err != nil {
		return nil, c, err
	}
	if needAuth && c.Token == "" {
		if c.SignedInTo != "" {
			return nil, c, fmt.Errorf("signed in to %s, not %s: run `barrage login --server %s`", c.SignedInTo, c.Server, c.Server)
		}
		if c.RefreshToken == "" {
			return nil, c, errors.New("not signed in: run `barrage login` (or set BARRAGE_TOKEN)")
		}
		if time.Until(c.ExpiresAt) < 30*time.Second {
			if c, err = refreshCredentials(ctx, e, hc, c); err != nil {
				return nil, c, err
			}
		}
	}
	bearer := c.Token
	if bearer == "" {
		bearer = c.AccessToken
	}
	cl, err := api.NewClientWithResponses(c.Server, api.WithHTTPClient(hc), api.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		if needAuth {
			r.Header.Set("Authorization", "Bearer "+bearer)
		}
		r.Header.Set("User-Agent", "barrage-cli/"+version)
		return nil
	}))
	return cl, c, err
}

func refreshCredentials(ctx context.Context, e env, hc *http.Client, c credentials) (credentials, error) {
	cl, err := api.NewClientWithResponses(c.Server, api.WithHTTPClient(hc))
	if err != nil {
		return c, err
	}
	res, err := cl.RefreshWithResponse(ctx, api.RefreshJSONRequestBody{RefreshToken: c.RefreshToken})
	if err != nil {
		return c, fmt.Errorf("renew session: %w", err)
	}
	if res.JSON200 == nil {
		return c, fmt.Errorf("renew session: %w; run `barrage login` again", api.ProblemError(res.HTTPResponse, res.Body))
	}
	c = sessionCredentials(c.Server, *res.JSON200)
	return c, saveCredentials(e, c)
}

func sessionCredentials(server string, t api.TokenPair) credentials {
	return credentials{
		Server: server, AccessToken: t.AccessToken, RefreshToken: t.RefreshToken,
		ExpiresAt: time.Now().Add(time.Duration(t.ExpiresIn) * time.Second),
	}
}

// readPassword reads a password: without echo from a terminal, else one line of stdin.
func readPassword(e env, prompt string) (string, error) {
	return newSecretReader(e).read(prompt)
}
